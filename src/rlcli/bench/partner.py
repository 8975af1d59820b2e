"""The partner rank of the bench's gloo all-reduce case, run by the ``distributed`` suite as
``python -m rlcli.bench.partner ADDRESS NUMEL``.

It joins rank 0 at ``ADDRESS`` (``tcp://host:port``) and matches its calls until rank 0 kills it:
rank 0 all-reduces a count, then that many buffers of ``NUMEL`` floats. When rank 0 dies first, the
next collective fails and so ends this process; a rank 0 that never comes is given up after a minute.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import timedelta

import torch
import torch.distributed as dist


def main(argv: Sequence[str]) -> None:
    """Be rank 1 of two at ``argv[0]``, all-reducing buffers of ``int(argv[1])`` floats."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=1, world_size=2, init_method=argv[0], timeout=timedelta(seconds=60))
    buf, ctrl = torch.zeros(int(argv[1])), torch.zeros(1)
    while True:
        ctrl.zero_()
        dist.all_reduce(ctrl)
        for _ in range(int(ctrl.item())):
            dist.all_reduce(buf)


if __name__ == "__main__":
    main(sys.argv[1:])
