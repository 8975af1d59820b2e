"""One rank of the check of the group's collectives in a real two-rank gloo group, started by
torchrun: gradients weighted by each rank's sample count, rows gathered in rank order, and running
statistics merged across ranks. Each rank writes what it got for the test to compare.

Usage: torchrun --standalone --nproc-per-node 2 collectives_worker.py OUT_DIR
"""

from __future__ import annotations

import json
import os
import sys

import torch

from rlcli.config.schema import OptimConfig
from rlcli.learning.optim import GradientStep
from rlcli.models.normalization import RunningMeanStd
from rlcli.runtime.distributed import from_environment
from rlcli.timing import Timer


def main() -> None:
    out = sys.argv[1]
    group = from_environment(torch.device("cpu"))
    rank = group.rank
    # Rank 0 holds 1 sample, rank 1 holds 3: x = 1, 2, 3, 4 in rank order.
    samples = torch.tensor([[1.0]]) if rank == 0 else torch.tensor([[2.0], [3.0], [4.0]])
    weight = torch.nn.Parameter(torch.zeros(1))
    step = GradientStep(OptimConfig(name="sgd", lr=1.0, max_grad_norm=0.0), [weight], iterations=1, group=group)
    timer = Timer(torch.device("cpu"))
    # d/dw of mean((w - x)^2 / 2) is w - mean(x): this rank's mean, then the pooled one.
    step(((weight - samples).square() / 2).mean(), timer, rows=samples.shape[0])
    weighted = weight.item()
    step(((weight - samples).square() / 2).mean(), timer)
    stats = RunningMeanStd((1,), group=group)
    stats.update(samples)
    rows = group.gather_rows(torch.tensor([float(rank), 10.0 + rank], dtype=torch.float64))
    result = {
        "weighted": weighted,
        "unweighted_step": weight.item() - weighted,
        "mean": stats.mean.item(),
        "var": stats.var.item(),
        "count": stats.count.item(),
        "rows": rows.tolist(),
    }
    with open(os.path.join(out, f"rank-{rank}.json"), "w", encoding="utf-8") as file:
        json.dump(result, file)
    group.close()


if __name__ == "__main__":
    main()
