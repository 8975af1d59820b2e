"""Proportional prioritized replay (Schaul et al., 2016) over a :class:`~rlcli.replay.sumtree.SumTree`,
as both ring buffers use it: stratified draws with their importance weights, priority updates,
and the annealed importance-sampling exponent."""

from __future__ import annotations

import torch

from rlcli.config.fields import ReplayConfig
from rlcli.replay.sumtree import SumTree


def annealed_beta(cfg: ReplayConfig, added: int) -> float:
    """The importance-sampling exponent after ``added`` transitions: from ``cfg.beta`` to 1 over ``beta_frames``."""
    return min(1.0, cfg.beta + (1.0 - cfg.beta) * added / cfg.beta_frames)


def proportional_draw(
    tree: SumTree, batch_size: int, generator: torch.Generator, *, size: int, beta: float, last: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Leaves drawn in proportion to their priority, one in each of ``batch_size`` equal slices of the
    total mass (stratified), and their importance weights ``(size * P(i))^-beta`` over the batch's
    largest; ``last`` caps the leaf index (rounding at the top of the tree).

    Returns (index [B] int64, weight [B] float32), on the tree's device.
    """
    device = tree.leaves.device
    total = tree.total()
    offsets = torch.rand(batch_size, generator=generator, device=device, dtype=torch.float64)
    mass = (torch.arange(batch_size, device=device, dtype=torch.float64) + offsets) * (total / batch_size)
    index = tree.find(mass)
    if last is not None:
        index = index.clamp_(max=last)
    weight = (tree.leaves.index_select(0, index) / total * size).pow(-beta)
    return index, (weight / weight.max()).to(torch.float32)


def set_priorities(tree: SumTree, cfg: ReplayConfig, index: torch.Tensor, td_error: torch.Tensor) -> float:
    """Set the leaves ``index`` to ``(|td_error| + eps) ** alpha``; returns the largest priority set."""
    device = tree.leaves.device
    priority = (td_error.detach().abs().to(device, torch.float64) + cfg.priority_eps).pow(cfg.alpha)
    tree.set(index.to(device), priority)
    return float(priority.max())
