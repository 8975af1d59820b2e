"""Make the Pendulum datasets the offline presets read, with rlcli itself (no downloads).

One ``sac_pendulum`` run (seed fixed) trains its whole 20k-frame budget (``--frames``), evaluating 10 episodes and
saving a checkpoint (replay buffer included) every 1,000 frames. From it:

- ``pendulum/expert-v0``: the final policy, played for ``--steps`` steps with Gaussian noise of 0.1
  half-ranges;
- ``pendulum/medium-v0``: the policy of the first checkpoint whose evaluation passed -700 (the run
  as it was when it first did), played the same way;
- ``pendulum/medium-replay-v0``: that checkpoint's replay buffer, all of it;
- ``pendulum/random-v0``: ``--steps`` steps of uniformly random actions (the 0 of a normalized score).

The datasets go to ``MINARI_DATASETS_PATH`` (else ``~/.minari/datasets``), which is printed. Run:
``python benchmarks/make_datasets.py [--steps 100000] [--overwrite]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile

from rlcli.config.load import load_config
from rlcli.datasets import datasets_root
from rlcli.recording import record_policy, record_random, record_replay
from rlcli.run import build_run
from rlcli.trainer import Hooks, train

MEDIUM_RETURN = -700.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000, help="steps of each played dataset")
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--frames", type=int, default=20_000, help="frames the sac_pendulum run trains (the expert is its last policy)"
    )
    args = parser.parse_args()
    runs = tempfile.mkdtemp(prefix="rlcli-datasets-")
    # Pendulum's best return is 0, so the threshold is never met and the whole budget is trained.
    cfg = load_config(
        "sac_pendulum",
        [
            f'run.output_dir="{runs}"',
            f"run.seed={args.seed}",
            "timing.enabled=false",
            "run.stop_at_return=0.0",
            f"collector.total_frames={args.frames}",
            "eval.every_frames=1000",
            "eval.episodes=10",
            "checkpoint.every_frames=1000",
            "checkpoint.keep_last=1000",
        ],
    )
    medium: dict = {}

    def note_medium(state) -> None:
        if (
            not medium
            and state.eval_frames == state.frames
            and state.last_eval.get("eval/return_mean", -1e9) >= MEDIUM_RETURN
        ):
            medium.update(frames=state.frames, eval=state.last_eval["eval/return_mean"])

    expert = train(build_run(cfg), hooks=Hooks(on_iteration_end=[note_medium]))
    if not medium:
        raise SystemExit(f"the run's evaluation never passed {MEDIUM_RETURN}: no medium policy")
    checkpoint = expert.run_dir / "checkpoints" / f"ckpt-{medium['frames']:012d}.pt"
    print(
        f"expert: {expert.frames:,} frames, last evaluation {expert.last_eval['eval/return_mean']:.1f}; "
        f"medium: the checkpoint at {medium['frames']:,} frames, evaluation {medium['eval']:.1f}"
    )
    written = {
        "expert": record_policy(
            expert.run_dir,
            steps=args.steps,
            out="pendulum/expert-v0",
            noise=0.1,
            seed=args.seed,
            overwrite=args.overwrite,
        ),
        "medium": record_policy(
            checkpoint, steps=args.steps, out="pendulum/medium-v0", noise=0.1, seed=args.seed, overwrite=args.overwrite
        ),
        "medium-replay": record_replay(checkpoint, out="pendulum/medium-replay-v0", overwrite=args.overwrite),
        "random": record_random(
            cfg.env, steps=args.steps, out="pendulum/random-v0", seed=args.seed, overwrite=args.overwrite
        ),
    }
    print(json.dumps({name: rec.to_json() for name, rec in written.items()}, indent=2))
    print(f"datasets written under {datasets_root()} (set MINARI_DATASETS_PATH to read them from elsewhere)")


if __name__ == "__main__":
    main()
