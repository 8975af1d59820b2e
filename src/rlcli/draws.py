"""Random draws shaped like a tensor, from a ``torch.Generator`` or from torch's default one.

Training, collection and evaluation pass their own generator (a run's draws are reproducible and resume
exactly); ``rlcli export --stochastic`` passes None. Without a generator the draws are the ``*_like`` ops,
which ``torch.export`` and the ONNX exporter take with a symbolic batch size (an explicit-shape
``torch.randn`` does not), and which become the ONNX ``RandomNormalLike``/``RandomUniformLike`` nodes.
With a generator the draws are exactly the explicit-shape calls they replace.
"""

from __future__ import annotations

import torch


def normal(like: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Standard-normal draws of ``like``'s shape, dtype and device."""
    if generator is None:
        return torch.randn_like(like)
    return torch.randn(like.shape, generator=generator, device=like.device, dtype=like.dtype)


def uniform(like: torch.Tensor, generator: torch.Generator | None, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Draws in [0, 1) of ``like``'s shape and device, in ``dtype`` (default: ``like``'s)."""
    dtype = like.dtype if dtype is None else dtype
    if generator is None:
        return torch.rand_like(like, dtype=dtype)
    return torch.rand(like.shape, generator=generator, device=like.device, dtype=dtype)


def integers(high: int, like: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Integers in [0, ``high``) of ``like``'s shape and device, int64."""
    if generator is None:
        # Lowered as a uniform draw scaled and floored: ONNX has no integer random op.
        return (torch.rand_like(like, dtype=torch.float32) * high).long().clamp(max=high - 1)
    return torch.randint(high, like.shape, generator=generator, device=like.device)
