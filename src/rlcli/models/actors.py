"""Actors for continuous control: a tanh-squashed Gaussian (SAC) and a deterministic one (TD3, DDPG).

Both emit actions already rescaled to the env's Box bounds, which is what the
replay buffer stores and the critics see.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces
from torch import nn

from rlcli import draws

if TYPE_CHECKING:
    from rlcli.models.encoders import Encoder

# The range SAC's reference implementation clamps the log standard deviation to.
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def squashed_gaussian(
    mean: torch.Tensor, log_std: torch.Tensor, noise: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``tanh(mean + std * noise)`` and its log-density (Haarnoja et al., 2018, appendix C).

    The change of variables subtracts ``log(1 - tanh(u)^2)`` per dimension,
    computed as ``2 * (log 2 - u - softplus(-2u))``, which stays finite where
    ``tanh(u)`` rounds to +-1.

    Args:
        mean, log_std, noise: [B, A] float32; ``noise`` standard normal.

    Returns:
        (action in (-1, 1) [B, A], log_prob [B]).
    """
    pre_tanh = torch.addcmul(mean, log_std.exp(), noise)
    # log N(u) - log(1 - tanh(u)^2) per dimension, folded into one expression:
    # -noise^2 / 2 - log_std - log(2 pi) / 2 - 2 log 2 + 2 u + 2 softplus(-2u).
    per_dim = torch.addcmul(2.0 * (pre_tanh + F.softplus(-2.0 * pre_tanh)) - log_std, noise, noise, value=-0.5)
    log_prob = per_dim.sum(-1) - mean.shape[-1] * (_HALF_LOG_2PI + 2.0 * math.log(2.0))
    return torch.tanh(pre_tanh), log_prob


class _Rescale(nn.Module):
    """Maps (-1, 1) to the Box bounds ``[low, high]``."""

    center: torch.Tensor
    half_range: torch.Tensor

    def __init__(self, space: spaces.Box):
        super().__init__()
        low, high = space.low.astype(np.float32), space.high.astype(np.float32)
        self.register_buffer("center", torch.as_tensor((high + low) / 2))
        self.register_buffer("half_range", torch.as_tensor((high - low) / 2))

    def forward(self, unit: torch.Tensor) -> torch.Tensor:
        return self.center + self.half_range * unit


class SquashedGaussianActor(nn.Module):
    """A state-dependent Gaussian squashed by tanh into the action bounds.

    Log-probabilities are those of the action in (-1, 1), before rescaling to the
    bounds (as in Stable-Baselines3), so a target entropy of ``-dim(A)`` means the
    same for every env whatever its action range.
    """

    def __init__(self, encoder: Encoder, net: nn.Module, space: spaces.Box):
        super().__init__()
        self.encoder = encoder
        self.net = net
        self.rescale = _Rescale(space)

    def forward(
        self,
        obs: torch.Tensor,
        generator: torch.Generator | None = None,
        *,
        deterministic: bool = False,
        noise: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(action in bounds [B, A], log_prob [B]) for normalized ``obs`` [B, *obs]; the action is
        reparameterized (differentiable in the weights), ``deterministic`` takes the mean and
        ``noise`` [B, A], when given, is the standard-normal draw to use."""
        mean, log_std = self.net(self.encoder(obs)).chunk(2, -1)
        log_std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        if noise is None:
            noise = torch.zeros_like(mean) if deterministic else draws.normal(mean, generator)
        unit, log_prob = squashed_gaussian(mean, log_std, noise)
        return self.rescale(unit), log_prob


class DeterministicActor(nn.Module):
    """``a = center + half_range * tanh(net(encoder(obs)))``: always inside the bounds."""

    def __init__(self, encoder: Encoder, net: nn.Module, space: spaces.Box):
        super().__init__()
        self.encoder = encoder
        self.net = net
        self.rescale = _Rescale(space)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.rescale(torch.tanh(self.net(self.encoder(obs))))


class BoundedGaussianActor(nn.Module):
    """A diagonal Gaussian whose mean is tanh-bounded into the action bounds, with a state-independent
    log standard deviation: the policy of IQL (Kostrikov et al., 2021) and of stochastic behaviour
    cloning. Unlike the squashed Gaussian, the density of any action in the bounds (a dataset's) is
    exact and finite."""

    def __init__(self, encoder: Encoder, net: nn.Module, space: spaces.Box, *, log_std_init: float = 0.0):
        super().__init__()
        self.encoder = encoder
        self.net = net
        self.rescale = _Rescale(space)
        self.log_std = nn.Parameter(torch.full((int(np.prod(space.shape)),), float(log_std_init)))

    def forward(self, obs: torch.Tensor) -> torch.distributions.Normal:
        """The Gaussian over actions (env units, [B, A]) for normalized ``obs`` [B, *obs]."""
        mean = self.rescale(torch.tanh(self.net(self.encoder(obs))))
        std = self.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX).exp().expand_as(mean)
        return torch.distributions.Normal(mean, std, validate_args=False)

    def log_prob(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """[B] log-density of ``action`` [B, A] (env units) under the policy at ``obs``."""
        return self(obs).log_prob(action).sum(-1)

    def act(self, obs: torch.Tensor, *, deterministic: bool, generator: torch.Generator | None) -> torch.Tensor:
        """The mean, or a sample drawn with ``generator`` clipped to the bounds."""
        dist = self(obs)
        if deterministic:
            return dist.loc
        noise = draws.normal(dist.loc, generator)
        center, half = self.rescale.center, self.rescale.half_range
        return torch.minimum(torch.maximum(dist.loc + dist.scale * noise, center - half), center + half)
