"""Policy heads: network outputs -> torch.distributions over env actions."""

from __future__ import annotations

import torch
from gymnasium import spaces
from torch import nn
from torch.distributions import Categorical, Normal


class CategoricalHead(nn.Module):
    """A categorical policy over ``Discrete(n)`` actions from ``n`` logits."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> Categorical:
        return Categorical(logits=self.net(obs), validate_args=False)

    @staticmethod
    def sample(dist: Categorical, generator: torch.Generator) -> torch.Tensor:
        """One action per row, drawn with ``generator`` (torch.distributions' sample has none)."""
        return torch.multinomial(dist.probs, 1, generator=generator).squeeze(-1)

    @staticmethod
    def mode(dist: Categorical) -> torch.Tensor:
        """The most probable action of each row ([B] int64)."""
        return dist.logits.argmax(-1)

    # Categorical normalizes its logits once; reading them directly skips the
    # broadcast, clamp and softmax that its generic log_prob and entropy add to
    # every training step (the logits of a network are always finite).
    @staticmethod
    def log_prob(dist: Categorical, action: torch.Tensor) -> torch.Tensor:
        return dist.logits.gather(-1, action.unsqueeze(-1)).squeeze(-1)

    @staticmethod
    def entropy(dist: Categorical) -> torch.Tensor:
        return -(dist.logits.exp() * dist.logits).sum(-1)


class GaussianHead(nn.Module):
    """A diagonal Gaussian over ``Box`` actions with a state-independent log-std.

    Samples are unbounded and stored as sampled, so their log-probabilities
    stay exact; the collector clips them to the Box bounds before the env
    sees them (clipping, not tanh squashing, as in PPO's reference code).
    """

    def __init__(self, net: nn.Module, space: spaces.Box, log_std_init: float):
        super().__init__()
        self.net = net
        self.log_std = nn.Parameter(torch.full(space.shape, float(log_std_init)))

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> Normal:
        # Box actions have no masks (the config refuses them): ``mask`` is always None here.
        mean = self.net(obs)
        return Normal(mean, self.log_std.exp().expand_as(mean), validate_args=False)

    @staticmethod
    def sample(dist: Normal, generator: torch.Generator) -> torch.Tensor:
        """One action per row, drawn with ``generator`` (torch.distributions' sample has none)."""
        noise = torch.randn(dist.loc.shape, generator=generator, device=dist.loc.device, dtype=dist.loc.dtype)
        return dist.loc + dist.scale * noise

    @staticmethod
    def mode(dist: Normal) -> torch.Tensor:
        """The mean of each row ([B, A]), unclipped like a sample."""
        return dist.loc

    @staticmethod
    def log_prob(dist: Normal, action: torch.Tensor) -> torch.Tensor:
        return dist.log_prob(action).sum(-1)

    @staticmethod
    def entropy(dist: Normal) -> torch.Tensor:
        return dist.entropy().sum(-1)
