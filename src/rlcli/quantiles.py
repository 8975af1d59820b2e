"""Quantile regression of return distributions, shared by QR-DQN and TQC: the quantile midpoints and
the quantile Huber loss (Dabney et al., 2018, eq. 10, with kappa = 1). Pure tensor functions."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def midpoints(count: int, device: torch.device | None = None) -> torch.Tensor:
    """The quantile fractions ``tau_i = (2i + 1) / (2 * count)`` ([count] float32) that ``count``
    quantile estimates regress to: the midpoints of ``count`` equal slices of [0, 1]."""
    return (torch.arange(count, dtype=torch.float32, device=device) + 0.5) / count


def quantile_huber(current: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The quantile Huber loss of every (estimate, target) pair: ``|tau_i - 1{u < 0}| * huber(u)`` with
    ``u = target_j - current_i`` and ``huber(u) = u^2 / 2`` for ``|u| <= 1``, ``|u| - 1/2`` beyond.

    Args:
        current: [..., N] float32, N quantile estimates (at :func:`midpoints` of N) per row.
        target: [..., M] float32, M samples of the target distribution per row (no gradient is
            taken through them); the leading dims broadcast against ``current``'s.

    Returns:
        [..., N, M] float32. QR-DQN sums it over N and averages over M; TQC averages over both.
    """
    shape = (*torch.broadcast_shapes(current.shape[:-1], target.shape[:-1]), current.shape[-1], target.shape[-1])
    estimate = current.unsqueeze(-1).expand(shape)
    sample = target.detach().unsqueeze(-2).expand(shape)
    # torch's fused Huber kernel, forward and backward, over expanded views: a third of the time of the
    # same maths in separate elementwise ops (sub, abs, where, square, mul) on [E, B, N, M] pairs.
    huber = F.huber_loss(estimate, sample, reduction="none", delta=1.0)
    tau = midpoints(current.shape[-1], current.device).unsqueeze(-1)
    # |tau - 1{u < 0}|: 1 - tau where the target lies below the estimate, tau elsewhere.
    return torch.where(sample < estimate, 1 - tau, tau) * huber
