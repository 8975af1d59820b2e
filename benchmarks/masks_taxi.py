"""Masked against unmasked PPO and DQN on Taxi: frames to gymnasium's threshold (8, the rolling mean of
100 training episodes) or the rolling return at the budget, and the invalid actions taken.

Each run trains ``ppo_taxi_masked`` or ``dqn_taxi_masked`` in this process on ``Bench/CountedTaxi-v0``
(registered below: gymnasium's Taxi itself, counting the actions its mask forbade), with ``[env] action_mask`` "info"
(masked) or "none" (unmasked), one seed at a time; training stops at the threshold. Invalid actions are
those of the training envs (collection, exploration included); there is no final evaluation.

    python benchmarks/masks_taxi.py                      # 3 seeds of each of the 4 variants
    python benchmarks/masks_taxi.py --seeds 0 --json /tmp/masks.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
from gymnasium.envs.toy_text.taxi import TaxiEnv

# Variant -> (preset, [env] action_mask).
VARIANTS = {
    "ppo masked": ("ppo_taxi_masked", "info"),
    "ppo unmasked": ("ppo_taxi_masked", "none"),
    "dqn masked": ("dqn_taxi_masked", "info"),
    "dqn unmasked": ("dqn_taxi_masked", "none"),
}
THRESHOLD = 8.0


class CountInvalid(gym.Wrapper):
    """Taxi counting the actions taken that its ``info["action_mask"]`` forbade, over the env's life.

    The benchmark's own instrument (benchmarks import nothing from tests/, whose env package has a
    counted Taxi of its own for the masks' tests): it reads the mask the env gave, not rlcli's copy."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.invalid_actions = 0
        self.mask = None

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.mask = info["action_mask"]
        return obs, info

    def step(self, action):
        self.invalid_actions += int(not self.mask[int(action)])
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.mask = info["action_mask"]
        return obs, reward, terminated, truncated, info


def counted_taxi(**kwargs) -> gym.Env:
    return CountInvalid(TaxiEnv(**kwargs))


# Taxi-v4's own registration: 200 steps an episode, a threshold of 8.
gym.register(id="Bench/CountedTaxi-v0", entry_point=counted_taxi, max_episode_steps=200, reward_threshold=8)


def run_one(preset: str, mask: str, seed: int, out: Path) -> dict:
    """Train one seed of ``preset`` with ``action_mask`` = ``mask``; returns its figures."""
    from rlcli.config.load import load_config
    from rlcli.run import build_run
    from rlcli.trainer.loop import train

    cfg = load_config(
        preset,
        [
            f"run.seed={seed}",
            'env.id="Bench/CountedTaxi-v0"',
            f'env.action_mask="{mask}"',
            f'run.output_dir="{out.as_posix()}"',
            "timing.enabled=false",
            "eval.final_episodes=0",
        ],
    )
    run = build_run(cfg)
    started = time.perf_counter()
    state = train(run)
    return {
        "seed": seed,
        "frames": state.frames,
        "solved_frames": state.solved_at[0] if state.solved_at else None,
        "last_return": state.last_return,
        "invalid_actions": int(sum(run.source.envs.unwrapped.get_attr("invalid_actions"))),
        "train_s": round(time.perf_counter() - started, 1),
    }


def markdown(results: dict[str, list[dict]]) -> str:
    rows = [
        "| variant | seed | frames to 8 | rolling return at the end | frames run | invalid actions | train s |",
        "|---|---|---|---|---|---|---|",
    ]
    for variant, runs in results.items():
        for r in runs:
            solved = "-" if r["solved_frames"] is None else f"{r['solved_frames']:,}"
            rows.append(
                f"| {variant} | {r['seed']} | {solved} | {r['last_return']:.1f} | {r['frames']:,} | "
                f"{r['invalid_actions']:,} | {r['train_s']} |"
            )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    parser.add_argument("--only", nargs="*", choices=list(VARIANTS), help="variants to run (default: all)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for variant in args.only or list(VARIANTS):
            preset, mask = VARIANTS[variant]
            results[variant] = []
            for seed in seeds:
                figures = run_one(preset, mask, seed, Path(tmp))
                results[variant].append(figures)
                print(variant, json.dumps(figures), flush=True)
    print(markdown(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
