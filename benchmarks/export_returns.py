"""Exported policies play the run's episodes: for each preset, train it (or take a run folder given with
``--run``), export it to ONNX and to pt2, and play 10 episodes of ``rlcli eval`` with the run's policy and
with each file on the same seeds (:func:`rlcli.play.playback.evaluate_run` with ``policy``). Prints each
episode's returns and, for a continuous policy, the first step at which the file's action left the eager
one's on the eager policy's own trajectory of that episode, and by how much.

    python benchmarks/export_returns.py                       # ppo_cartpole sac_pendulum dqn_cartpole ppo_breakout
    python benchmarks/export_returns.py --presets sac_pendulum --frames sac_pendulum=20000
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import torch

from rlcli.config.load import load_config
from rlcli.envs import make_env
from rlcli.play.export import deployed, export_policy
from rlcli.play.playback import evaluate_run
from rlcli.play.policy_file import PolicyFile
from rlcli.run import build_run
from rlcli.trainer.checkpoint_folder import find_checkpoint
from rlcli.trainer.loop import train

PRESETS = ("ppo_cartpole", "sac_pendulum", "dqn_cartpole", "ppo_breakout")
FRAMES = {"ppo_breakout": 200_000}
"""Budgets below the preset's own: Breakout's 10M frames are hours here; 200k already plays a policy."""


def trained(preset: str, frames: int | None, out: Path) -> Path:
    overrides = [f'run.output_dir="{out}"', "eval.final_episodes=0", "run.threads=1"]
    if frames is not None:
        overrides.append(f"collector.total_frames={frames}")
    return train(build_run(load_config(preset, overrides))).run_dir


def first_divergence(folder: Path, file: Path, seed: int) -> dict:
    """On one episode of the eager policy (reset with ``seed``): the first step at which the file's action
    differs from the eager one, and the largest difference over the episode."""
    _, weights = find_checkpoint(folder)
    module, _, _ = deployed(folder, weights)
    played = PolicyFile(file)
    env = make_env(load_config(folder / "config.toml").env, render=False, source=str(folder))
    observation, _ = env.reset(seed=seed)
    first, largest, step, done = None, 0.0, 0, False
    while not done:
        obs = torch.as_tensor(np.asarray(observation))[None]
        with torch.no_grad():
            eager = module(obs)
        other = played.actions(obs, deterministic=True)
        gap = float((eager.double() - other.double()).abs().max())
        if gap > 0 and first is None:
            first = step
        largest = max(largest, gap)
        observation, _, terminated, truncated, _ = env.step(eager[0].numpy())
        step, done = step + 1, terminated or truncated
    env.close()
    return {"first_step_differing": first, "largest_action_difference": largest, "steps": step}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="*", default=list(PRESETS))
    parser.add_argument("--run", action="append", default=[], metavar="PRESET=RUN_DIR")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    given = dict(item.split("=", 1) for item in args.run)
    rows = []
    with tempfile.TemporaryDirectory(prefix="rlcli-export-returns-") as scratch:
        for preset in args.presets:
            folder = Path(given[preset]) if preset in given else trained(preset, FRAMES.get(preset), Path(scratch))
            for fmt in ("onnx", "pt2"):
                file = export_policy(folder, format=fmt, out=Path(scratch) / f"{preset}.{fmt}").path
                report = evaluate_run(folder, episodes=args.episodes, policy=file)
                run, other = report.result.returns, report.policy_result.returns
                row = {
                    "preset": preset,
                    "format": fmt,
                    "run_returns": run,
                    "file_returns": other,
                    "max_return_difference": max(abs(a - b) for a, b in zip(run, other)),
                    "equal_episodes": sum(a == b for a, b in zip(run, other)),
                }
                if any(a != b for a, b in zip(run, other)):
                    row["divergence"] = first_divergence(folder, file, report.seed)
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
