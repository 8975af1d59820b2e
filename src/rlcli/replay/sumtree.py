"""A sum-tree of priorities for proportional prioritized replay (Schaul et al., 2016)."""

from __future__ import annotations

import math

import torch

# Levels up to this many nodes are searched with one prefix sum over the whole level.
_FULL_PREFIX = 16384


class SumTree:
    """Sums of non-negative priorities in a tree of fanout F, for proportional sampling.

    A wide tree (F ~ 100 for a million leaves, three levels) turns each descent
    into a few batched gathers, cumsums and searchsorteds over [B, F] rows,
    instead of twenty dependent steps of a binary tree. Levels are float64 so
    that sums of a million priorities keep their precision.
    """

    def __init__(self, capacity: int, device: torch.device):
        self.fanout, depth = self.layout(capacity)
        self.capacity = capacity
        # levels[0] holds the F children of the root, levels[-1] the leaves.
        self.levels = [torch.zeros(self.fanout**d, dtype=torch.float64, device=device) for d in range(1, depth + 1)]

    @staticmethod
    def layout(capacity: int) -> tuple[int, int]:
        """(fanout, depth) with fanout**depth >= capacity and fanout at most about 128."""
        depth = max(1, math.ceil(math.log(max(capacity, 2)) / math.log(128)))
        fanout = max(2, math.ceil(capacity ** (1 / depth)))
        while fanout**depth < capacity:
            fanout += 1
        return fanout, depth

    @property
    def leaves(self) -> torch.Tensor:
        return self.levels[-1]

    def total(self) -> torch.Tensor:
        """The sum of every priority (a 0-d float64 tensor)."""
        return self.levels[0].sum()

    def set(self, index: torch.Tensor, priority: torch.Tensor | float) -> None:
        """Set the priorities at ``index`` ([B] int64) to ``priority`` ([B] or scalar) and refresh the sums.

        Parent sums are recomputed from their children, not shifted by deltas,
        so repeated indices and rounding cannot make them drift.
        """
        self.leaves[index] = priority.to(torch.float64) if isinstance(priority, torch.Tensor) else priority
        node = index
        for depth in range(len(self.levels) - 1, 0, -1):
            node = node // self.fanout
            self.levels[depth - 1][node] = self.levels[depth].view(-1, self.fanout).index_select(0, node).sum(1)

    def find(self, mass: torch.Tensor) -> torch.Tensor:
        """Leaf index whose prefix-sum interval holds each ``mass`` ([B] float64 in [0, total)).

        The descent starts at the deepest level small enough for one full prefix
        sum (10^4 nodes for a million leaves), then walks the [B, F] rows below it.
        """
        fanout = self.fanout
        start = max(d for d, level in enumerate(self.levels) if level.numel() <= _FULL_PREFIX)
        level = self.levels[start]
        prefix = level.cumsum(0)
        node = torch.searchsorted(prefix, _inside(mass, prefix[-1]), right=True)
        mass = (mass - (prefix.index_select(0, node) - level.index_select(0, node))).unsqueeze(1)
        for level in self.levels[start + 1 :]:
            rows = level.view(-1, fanout).index_select(0, node)
            prefix = rows.cumsum(1)
            child = torch.searchsorted(prefix, _inside(mass, prefix[:, -1:]), right=True)
            mass = mass - (prefix.gather(1, child) - rows.gather(1, child))
            node = node * fanout + child.squeeze(1)
        return node


def _inside(mass: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
    """``mass`` moved into [0, total), so that a searchsorted(right=True) over prefix sums
    picks a node of positive priority: the first whose running sum passes the mass.

    Subtracting prefix sums can round a remainder just below 0 or up to the total,
    which would land on an empty neighbour.
    """
    below_total = torch.nextafter(total, torch.zeros_like(total))
    return torch.minimum(mass.clamp(min=0.0), below_total)
