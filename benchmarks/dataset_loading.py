"""How fast and how compactly rlcli reads a Minari dataset: the issue's case of 1M transitions with
17-dim observations and 6-dim actions (HalfCheetah's shapes; float64 observations and float32 actions,
as gymnasium's MuJoCo envs give them), in 1,000 episodes of 1,000 steps.

Writes the dataset once (random values, through minari's ``create_dataset_from_buffers``) in a temp
folder, then loads it ``--repeat`` times with ``rlcli.datasets.load_dataset``, each in a fresh process,
and prints the median seconds, the bytes held beside the bytes of the raw arrays in the file, and the
process's peak memory above its footprint before loading. Run: ``python benchmarks/dataset_loading.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

OBS, ACT = 17, 6


def write(folder: Path, episodes: int, length: int) -> Path:
    import gymnasium as gym
    import minari
    from minari.data_collector import EpisodeBuffer

    rng = np.random.default_rng(0)
    buffers = [
        EpisodeBuffer(
            observations=rng.standard_normal((length + 1, OBS)),
            actions=rng.uniform(-1, 1, (length, ACT)).astype(np.float32),
            rewards=rng.standard_normal(length),
            terminations=np.zeros(length, bool),
            truncations=np.r_[np.zeros(length - 1, bool), True],
            infos={},
        )
        for _ in range(episodes)
    ]
    obs_space = gym.spaces.Box(-np.inf, np.inf, (OBS,), np.float64)
    act_space = gym.spaces.Box(-1, 1, (ACT,), np.float32)
    import os

    os.environ["MINARI_DATASETS_PATH"] = str(folder)
    minari.create_dataset_from_buffers(
        "bench/loading-v0", buffers, observation_space=obs_space, action_space=act_space, algorithm_name="random"
    )
    return folder / "bench" / "loading-v0"


def load_once(path: str) -> dict:
    """Run in a fresh process: load ``path``, report seconds, bytes and peak memory."""
    import resource
    import time

    from rlcli.datasets import load_dataset, open_dataset

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    data = load_dataset(open_dataset(path))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    steps, episodes = data.transitions, data.episodes
    # What the file holds: every observation (L + 1 per episode) in float64, float32 actions, float64
    # rewards, and the two flags.
    raw = (steps + episodes) * OBS * 8 + steps * ACT * 4 + steps * 8 + steps * 2
    return {
        "seconds": seconds,
        "bytes": data.nbytes,
        "raw_bytes": raw,
        "peak_above_start": peak - before,
        "transitions": steps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--length", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(load_once(args.child)))
        return
    with tempfile.TemporaryDirectory(prefix="rlcli-loading-") as folder:
        path = write(Path(folder), args.episodes, args.length)
        runs = [
            json.loads(
                subprocess.run(
                    [sys.executable, __file__, "--child", str(path)], capture_output=True, text=True, check=True
                ).stdout
            )
            for _ in range(args.repeat)
        ]
    seconds = statistics.median(r["seconds"] for r in runs)
    first = runs[0]
    print(
        f"{first['transitions']:,} transitions: load median {seconds:.2f} s "
        f"(runs {', '.join(format(r['seconds'], '.2f') for r in runs)}); held {first['bytes'] / 2**20:,.0f} MiB = "
        f"{first['bytes'] / first['raw_bytes']:.3f}x the raw arrays' {first['raw_bytes'] / 2**20:,.0f} MiB; "
        f"peak memory above the start {statistics.median(r['peak_above_start'] for r in runs) / 2**20:,.0f} MiB"
    )


if __name__ == "__main__":
    main()
