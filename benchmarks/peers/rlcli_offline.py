"""rlcli's iql_pendulum_medium or cql_pendulum_medium timed as benchmarks/peers/d3rlpy_offline.py times d3rlpy.

Through rlcli's Python API, with rlcli's own Python (never the d3rlpy venv):
``load_config("<algo>_pendulum_medium", overrides)``, ``build_run``, ``trainer.train``, with

    data.total_steps=<steps>  data.steps_per_iteration=<1000, or steps when 1000 does not divide it>
    eval.every_frames=0  checkpoint.every_frames=0  run.seed=<seed>  run.device="cpu"
    run.threads=<threads>  run.output_dir=<a new folder under --out>  data.dataset=<--dataset>
    network.hidden_sizes=<--hidden, default [256, 256]>

so that the run takes exactly ``--steps`` gradient steps and evaluates once, after its last
iteration (``eval.episodes``, 10). The network widths are set here, not taken from the preset, so
that both peers train the same networks whatever widths the preset ships. ``build_run`` (reading the dataset into tensors, the observation
statistics, the networks) is ``setup_seconds``, outside the clock, as d3rlpy's scaler fit and build
are on its side.

``train_seconds`` is the run's ``wall_time_s`` (the trainer loop, from before its first iteration to
after its last: what run.json records) minus the seconds of its ``eval`` phase (``state.timer``);
``call_seconds`` is the whole ``train()`` call (folder setup and the final checkpoint and weights
saves too), for information.

Score: after training, the policy's mean action plays 10 episodes of Pendulum-v1 reset with seeds
1000000 + i, as d3rlpy_offline.py plays them (``eval_return_mean``/``_std``); rlcli's own end-of-run
evaluation (its seeds) is ``rlcli_eval_return_mean``. Prints one JSON line.

    MINARI_DATASETS_PATH=/tmp/minari-data2 python benchmarks/peers/rlcli_offline.py --algo iql --steps 50000 --seed 0
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from rlcli.config.load import load_config
from rlcli.run import build_run
from rlcli.trainer.loop import train

PRESETS = {"iql": "iql_pendulum_medium", "cql": "cql_pendulum_medium"}
EVAL_EPISODES = 10
EVAL_SEED = 1_000_000


def evaluate(agent, env_id: str, device: torch.device) -> list[float]:
    """Returns of ``EVAL_EPISODES`` episodes of the mean action, reset with seeds EVAL_SEED + i."""
    env = gym.make(env_id)
    generator = torch.Generator(device=device)
    returns = []
    for i in range(EVAL_EPISODES):
        obs, _ = env.reset(seed=EVAL_SEED + i)
        total, done = 0.0, False
        while not done:
            batch = torch.as_tensor(np.asarray(obs, dtype=np.float32)[None], device=device)
            action = agent.actions(batch, deterministic=True, generator=generator)[0].cpu().numpy()
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=tuple(PRESETS), required=True)
    parser.add_argument("--steps", type=int, default=50_000, help="gradient steps (default 50000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dataset", default="pendulum/medium-v0", help="Minari dataset id")
    parser.add_argument("--threads", type=int, default=1, help="run.threads (default 1)")
    parser.add_argument("--hidden", default="256,256", help="network.hidden_sizes (default 256,256)")
    parser.add_argument("--out", default="/tmp/peer-rlcli", help="each run gets a new folder under it")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        dest="sets",
        metavar="KEY=VALUE",
        help="a further rlcli override (repeatable)",
    )
    args = parser.parse_args()
    hidden = [int(width) for width in args.hidden.split(",")]
    Path(args.out).mkdir(parents=True, exist_ok=True)
    out = tempfile.mkdtemp(prefix="run-", dir=args.out)
    per_iteration = 1000 if args.steps % 1000 == 0 else args.steps
    overrides = [
        f"data.total_steps={args.steps}",
        f"data.steps_per_iteration={per_iteration}",
        f"data.dataset={json.dumps(args.dataset)}",
        "eval.every_frames=0",
        "checkpoint.every_frames=0",
        f"run.seed={args.seed}",
        'run.device="cpu"',
        f"run.threads={args.threads}",
        f"run.output_dir={json.dumps(out)}",
        f"network.hidden_sizes={json.dumps(hidden)}",
        *args.sets,
    ]
    cfg = load_config(PRESETS[args.algo], overrides)

    start = time.perf_counter()
    run = build_run(cfg, source=PRESETS[args.algo], overrides=overrides)
    setup = time.perf_counter() - start
    agent, device = run.algo.agent, run.device
    start = time.perf_counter()
    state = train(run)
    call = time.perf_counter() - start
    if state.status != "completed":
        raise SystemExit(f"rlcli run {state.run_dir} ended {state.status}: {state.error}")
    eval_seconds = state.timer.totals.get("eval", 0.0)

    returns = evaluate(agent, cfg.env.id, device)
    print(
        json.dumps(
            {
                "peer": "rlcli",
                "version": version("rlcli"),
                "algo": args.algo,
                "steps": cfg.data.steps,
                "train_seconds": state.wall_time - eval_seconds,
                "eval_return_mean": float(np.mean(returns)),
                "eval_return_std": float(np.std(returns)),
                "seed": args.seed,
                "dataset": args.dataset,
                "hidden": cfg.network.hidden_sizes,
                "setup_seconds": setup,
                "call_seconds": call,
                "eval_seconds": eval_seconds,
                "rlcli_eval_return_mean": state.last_eval.get("eval/return_mean"),
                "threads": torch.get_num_threads(),
                "sets": args.sets,
                "run_dir": str(state.run_dir),
                "versions": {name: version(name) for name in ("rlcli", "torch", "gymnasium", "minari", "numpy")},
            }
        )
    )


if __name__ == "__main__":
    main()
