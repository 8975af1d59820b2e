"""Memory of dqn_breakout's replay: the storage's own count, and the resident set before and after a
buffer is filled with real Breakout transitions (random play, the collector and replay of a run).

Run in a fresh process so that the figures are the buffer's (about a minute per 100k transitions):

    python benchmarks/atari_replay_memory.py [--capacity 100000] [--frames off]
"""

from __future__ import annotations

import argparse
import tempfile

import torch

# benchmarks/ is on sys.path when a script of it runs.
from replay_memory import rss_mib
from rlcli.config.load import load_config
from rlcli.replay.frames import frame_storage_bytes
from rlcli.replay.storage import storage_bytes
from rlcli.run import build_run
from rlcli.timing import Timer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=100_000)
    parser.add_argument("--frames", choices=["auto", "off"], default="auto")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        cfg = load_config(
            "dqn_breakout",
            [
                f'run.output_dir="{folder}"',
                "run.device=cpu",
                f"algo.replay.capacity={args.capacity}",
                f'algo.replay.frames="{args.frames}"',
                "collector.frames_per_batch=1024",
                "algo.learning_starts=10000000",
                "collector.total_frames=20000000",
            ],
        )
        run = build_run(cfg)
        replay = run.algo.replay
        one_m, spec = cfg.algo.replay.model_copy(update={"capacity": 1_000_000}), replay.buffer.spec
        counted = (
            frame_storage_bytes(one_m, spec, num_envs=cfg.env.num_envs)
            if args.frames == "auto"
            else storage_bytes(one_m, spec)
        )
        start = rss_mib()
        timer = Timer(run.device)
        while replay.frames < args.capacity + 2048:
            replay.observe(run.collector.collect(timer))
        filled = rss_mib()
        run.close()
    print(f"frames = {args.frames}, capacity {args.capacity:,}, storage {type(replay.buffer).__name__}")
    print(f"1M transitions by the storage's count: {counted / 1e9:.2f} GB")
    print(f"RSS before the buffer: {start:8.1f} MiB")
    print(f"RSS full (wrapped):    {filled:8.1f} MiB  (+{(filled - start) / 1024:.2f} GiB)")


if __name__ == "__main__":
    main()
