"""Batch renormalization (Ioffe, 2017), as CrossQ's critics and actor use it (Bhatt et al., 2024).

A layer normalizes its input by the statistics of the batch while it learns, and by running averages
of them otherwise. After ``warmup`` learning steps the batch's statistics are corrected toward the
running ones (the renormalization ``r`` and ``d``, clipped to ``rmax`` and ``dmax``), so that a batch
unlike the others moves the layer less. Which statistics a layer reads is set explicitly by
:func:`learning`, never by ``nn.Module.train()``: acting, evaluation and targets always read the
running statistics, and only the forward passes an algorithm names update them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from rlcli.models.mlp import ACTIVATIONS


@dataclass(frozen=True)
class Renorm:
    """The settings of a network's :class:`BatchRenorm` layers."""

    momentum: float = 0.01
    eps: float = 0.001
    warmup: int = 100_000


class BatchRenorm(nn.Module):
    """Batch renormalization of ``features`` features over the batch dimension (the second to last), with a
    learned scale and shift; with ``members``, one set of statistics and affine weights per member of an
    ensemble (inputs ``[E, B, features]``), otherwise inputs ``[B, features]``."""

    running_mean: torch.Tensor
    running_var: torch.Tensor
    steps: torch.Tensor

    def __init__(
        self,
        features: int,
        *,
        members: int | None = None,
        momentum: float = 0.01,
        eps: float = 0.001,
        warmup: int = 100_000,
        rmax: float = 3.0,
        dmax: float = 5.0,
    ):
        super().__init__()
        shape = (features,) if members is None else (members, 1, features)
        self.register_buffer("running_mean", torch.zeros(shape))
        self.register_buffer("running_var", torch.ones(shape))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.scale = nn.Parameter(torch.ones(shape))
        self.shift = nn.Parameter(torch.zeros(shape))
        self.momentum, self.eps, self.warmup, self.rmax, self.dmax = momentum, eps, warmup, rmax, dmax
        self.ensemble = members is not None
        self.learning = False
        """Whether a forward normalizes by the batch (and updates the running statistics): set by
        :func:`learning`."""
        self._steps: int | None = None
        """``steps`` as a Python int, read from the buffer on first use and after a state dict is loaded, so
        that whether to renormalize is decided without a tensor read (a device sync on CUDA) per call."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # In float32 under bf16 autocast too, as torch's autocast runs its own normalization layers: the
        # statistics are sums over the batch, and the running ones are float32 buffers.
        x = x.float()
        if self.learning:
            mean, var = self._renormalized(x)
        else:
            mean, var = self.running_mean, self.running_var
        # scale * (x - mean) / sqrt(var + eps) + shift, with one elementwise pass over the batch: the
        # per-feature factor and offset are formed first.
        factor = self.scale * (var + self.eps).rsqrt()
        return torch.addcmul(self.shift - mean * factor, x, factor)

    def _renormalized(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The mean and variance a learning forward normalizes ``x`` by, after which the running statistics
        take in the batch's."""
        mean, var = _batch_moments(x, keepdim=self.ensemble)
        if self._steps is None:
            self._steps = int(self.steps)
        used_mean, used_var = mean, var
        if self._steps > self.warmup:
            # Renormalization, once past the warm-up: the batch's statistics corrected by the running
            # ones, the corrections constants of the step (no gradient through them).
            running_std = (self.running_var + self.eps).sqrt()
            r = ((var + self.eps).sqrt() / running_std).detach().clamp(1 / self.rmax, self.rmax)
            d = ((mean - self.running_mean) / running_std).detach().clamp(-self.dmax, self.dmax)
            used_mean = mean - d * var.sqrt() / r
            used_var = var / r.square()
        with torch.no_grad():
            torch._foreach_lerp_([self.running_mean, self.running_var], [mean, var], self.momentum)
            self.steps += 1
        self._steps += 1
        return used_mean, used_var

    def _load_from_state_dict(self, *args, **kwargs) -> None:
        super()._load_from_state_dict(*args, **kwargs)
        self._steps = None

    def extra_repr(self) -> str:
        return f"{self.running_mean.shape[-1]}, momentum={self.momentum}, eps={self.eps}, warmup={self.warmup}"


def _batch_moments(x: torch.Tensor, *, keepdim: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean and unbiased variance of ``x`` over its second to last dimension (the batch)."""
    if x.shape[-1] < 16:
        var, mean = torch.var_mean(x, -2, keepdim=keepdim)
        return mean, var
    # On a CPU, torch.var_mean over the batch of a wide layer is a slow strided reduction: at 512 x 64, 0.6 ms
    # forward and backward where a mean, the centred squares and their sum take 0.3 ms (one thread); for a few
    # features (an input of 3 or 4) var_mean is the cheaper.
    mean = x.mean(-2, keepdim=True)
    centred = x - mean
    var = centred.square().sum(-2, keepdim=True) / (x.shape[-2] - 1)
    return (mean, var) if keepdim else (mean.squeeze(-2), var.squeeze(-2))


@contextmanager
def learning(module: nn.Module) -> Iterator[None]:
    """Within it, every :class:`BatchRenorm` layer of ``module`` normalizes by its batch and updates its
    running statistics; outside, it reads the running statistics only."""
    layers = [layer for layer in module.modules() if isinstance(layer, BatchRenorm)]
    for layer in layers:
        layer.learning = True
    try:
        yield
    finally:
        for layer in layers:
            layer.learning = False


def renormed_mlp(
    in_features: int, hidden_sizes: Sequence[int], out_features: int, *, activation: str, renorm: Renorm
) -> nn.Sequential:
    """An MLP ``in -> hidden... -> out`` with a :class:`BatchRenorm` layer before every linear one, as
    sb3-contrib's CrossQ actor builds it (its input, each hidden layer, and the last hidden layer's output
    before the head)."""
    sizes = [in_features, *hidden_sizes]
    layers: list[nn.Module] = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        layers += [_layer(fan_in, None, renorm), nn.Linear(fan_in, fan_out), ACTIVATIONS[activation]()]
    layers += [_layer(sizes[-1], None, renorm), nn.Linear(sizes[-1], out_features)]
    return nn.Sequential(*layers)


def _layer(features: int, members: int | None, renorm: Renorm) -> BatchRenorm:
    return BatchRenorm(features, members=members, momentum=renorm.momentum, eps=renorm.eps, warmup=renorm.warmup)
