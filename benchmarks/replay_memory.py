"""Memory of a 1M-transition replay buffer: bytes allocated, resident set before and after filling it.

Uses the ``buffer`` bench suite's data shape (17-dim observations, next observations
included, 6-dim actions). Run in a fresh process so that the figures are the buffer's:

    python benchmarks/replay_memory.py [--prioritized]
"""

from __future__ import annotations

import argparse
import resource

import torch

from rlcli.bench.transitions import BUFFER_SPEC, random_transitions
from rlcli.config.fields import ReplayConfig
from rlcli.replay.storage import ReplayBuffer, storage_bytes


def rss_mib() -> float:
    """Resident set size of this process now, from /proc (Linux)."""
    with open("/proc/self/statm", encoding="ascii") as file:
        pages = int(file.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=1_000_000)
    parser.add_argument("--prioritized", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = ReplayConfig(capacity=args.capacity, prioritized=args.prioritized)
    generator = torch.Generator().manual_seed(0)
    chunk = random_transitions((16, 32), generator)
    start = rss_mib()
    buffer = ReplayBuffer(cfg, BUFFER_SPEC, device=torch.device("cpu"))
    buffer.extend(chunk)
    allocated = sum(t.numel() * t.element_size() for t in buffer.tensors.values())
    if buffer.tree is not None:
        allocated += sum(level.numel() * level.element_size() for level in buffer.tree.levels)
    # Fill every slot, wrapping once, with the same [16, 32] batch the bench extends with.
    while buffer.added < args.capacity + 512:
        buffer.extend(chunk)
    filled = rss_mib()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"capacity {args.capacity:,}, prioritized {args.prioritized}")
    print(f"storage_bytes (planned):   {storage_bytes(cfg, BUFFER_SPEC) / 2**20:8.1f} MiB")
    print(f"tensors allocated:         {allocated / 2**20:8.1f} MiB")
    print(f"RSS before the buffer:     {start:8.1f} MiB")
    print(f"RSS full (wrapped once):   {filled:8.1f} MiB  (+{filled - start:.1f} MiB)")
    print(f"peak RSS of the process:   {peak:8.1f} MiB")


if __name__ == "__main__":
    main()
