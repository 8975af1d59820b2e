"""Policy heads: network outputs -> torch.distributions over env actions, under the env's action
masks where it gives them (one masking helper per action space: :func:`masked_logits`)."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator
from functools import reduce
from typing import Protocol, TypeVar

import torch
from gymnasium import spaces
from torch import nn
from torch.distributions import Bernoulli, Categorical, Normal, kl_divergence

from rlcli import draws

MASKED_LOGIT = -1e8
"""The logit of an action the mask forbids: finite, so that its term of the entropy is 0 * -1e8 = 0
rather than 0 * -inf = NaN, and low enough that its probability is exactly 0 in float32 (the value of
sb3-contrib's MaskableCategorical)."""

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))
"""The Gaussian log-density's constant, as ``torch.distributions.Normal.log_prob`` writes it."""


def draw_through(
    head: PolicyHead, obs: torch.Tensor, mask: torch.Tensor | None, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """(action, its log-probability [B]) at ``obs`` through the distribution ``head`` gives: the ``draw`` of
    heads whose distributions cost little beside their arithmetic."""
    dist = head(obs, mask)
    action = head.sample(dist, generator)
    return action, head.log_prob(dist, action)


def masked_logits(logits: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``logits`` ([B, A]) with the actions ``mask`` forbids ([B, A] bool, True: allowed) set to
    :data:`MASKED_LOGIT`; ``logits`` itself without a mask. A categorical over the result is the
    softmax over the allowed actions alone: its samples, log-probabilities and entropy ignore the others."""
    if mask is None:
        return logits
    return torch.where(mask, logits, torch.tensor(MASKED_LOGIT, dtype=logits.dtype, device=logits.device))


Dist = TypeVar("Dist")


class PolicyHead(Protocol[Dist]):
    """What an actor-critic reads of its policy head: the distribution ``Dist`` at a batch of features, and
    the head's own functions of it. Every head here is an ``nn.Module``; the members of one that its users
    call (``parameters``, ``net``) are declared so that they stay typed."""

    @property
    def net(self) -> nn.Module: ...

    def __call__(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> Dist: ...

    def parameters(self, recurse: bool = True) -> Iterator[nn.Parameter]: ...

    def sample(self, dist: Dist, generator: torch.Generator) -> torch.Tensor: ...

    def draw(
        self, obs: torch.Tensor, mask: torch.Tensor | None, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]: ...

    def mode(self, dist: Dist) -> torch.Tensor: ...

    def log_prob(self, dist: Dist, action: torch.Tensor) -> torch.Tensor: ...

    def entropy(self, dist: Dist) -> torch.Tensor: ...

    def kl(self, old: Dist, new: Dist) -> torch.Tensor: ...


class CategoricalHead(nn.Module):
    """A categorical policy over ``Discrete(n)`` actions from ``n`` logits."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> Categorical:
        """The policy at ``obs`` over the actions ``mask`` allows ([B, n] bool), or over all of them."""
        return Categorical(logits=masked_logits(self.net(obs), mask), validate_args=False)

    @staticmethod
    def sample(dist: Categorical, generator: torch.Generator) -> torch.Tensor:
        """One action per row, drawn with ``generator`` (torch.distributions' sample has none)."""
        return torch.multinomial(dist.probs, 1, generator=generator).squeeze(-1)

    def draw(
        self, obs: torch.Tensor, mask: torch.Tensor | None, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(action [B] int64, its log-probability [B]) at ``obs``: :meth:`sample` and :meth:`log_prob` of the
        distribution :meth:`forward` gives, computed as ``Categorical`` computes them (the same numbers) without
        building one, which costs a collection step more than the arithmetic."""
        logits = masked_logits(self.net(obs), mask)
        logits = logits - logits.logsumexp(-1, keepdim=True)
        action = torch.multinomial(torch.softmax(logits, -1), 1, generator=generator)
        return action.squeeze(-1), logits.gather(-1, action).squeeze(-1)

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

    @staticmethod
    def kl(old: Categorical, new: Categorical) -> torch.Tensor:
        """KL(old || new) of each row ([B]): a forbidden action (probability 0 under ``old``) adds 0."""
        return (old.probs * (old.logits - new.logits)).sum(-1)


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
        noise = draws.normal(dist.loc, generator)
        return dist.loc + dist.scale * noise

    def draw(
        self, obs: torch.Tensor, mask: torch.Tensor | None, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(action [B, A], its log-probability [B]) at ``obs``: :meth:`sample` and :meth:`log_prob` of the
        distribution :meth:`forward` gives, computed as ``Normal`` computes them (the same numbers) without
        building one."""
        loc = self.net(obs)
        scale = self.log_std.exp().expand_as(loc)
        action = loc + scale * draws.normal(loc, generator)
        log_prob = -((action - loc) ** 2) / (2 * scale**2) - scale.log() - _LOG_SQRT_2PI
        return action, log_prob.sum(-1)

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

    @staticmethod
    def kl(old: Normal, new: Normal) -> torch.Tensor:
        """KL(old || new) of each row ([B]), summed over the action's dimensions."""
        return kl_divergence(old, new).sum(-1)


class MultiCategoricalHead(nn.Module):
    """Independent categorical policies over the sub-actions of a 1-D ``MultiDiscrete(nvec)`` (as
    Stable-Baselines3's MultiCategoricalDistribution), from ``sum(nvec)`` logits: the log-probability
    and the entropy of an action are the sums of its sub-actions'. A mask is the flat concatenation of
    one mask per sub-action ([B, sum(nvec)], sb3-contrib MaskablePPO's convention)."""

    def __init__(self, net: nn.Module, space: spaces.MultiDiscrete):
        super().__init__()
        self.net = net
        self.sizes = [int(n) for n in space.nvec]

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> list[Categorical]:
        logits = self.net(obs).split(self.sizes, -1)
        masks = [None] * len(self.sizes) if mask is None else mask.split(self.sizes, -1)
        return [Categorical(logits=masked_logits(lg, m), validate_args=False) for lg, m in zip(logits, masks)]

    @staticmethod
    def sample(dist: list[Categorical], generator: torch.Generator) -> torch.Tensor:
        """One action per row ([B, k] int64), sub-action by sub-action, drawn with ``generator``."""
        return torch.stack([CategoricalHead.sample(sub, generator) for sub in dist], -1)

    def draw(
        self, obs: torch.Tensor, mask: torch.Tensor | None, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(action, its log-probability [B]) at ``obs``, through the distribution :meth:`forward` gives."""
        return draw_through(self, obs, mask, generator)

    @staticmethod
    def mode(dist: list[Categorical]) -> torch.Tensor:
        """Each sub-action's most probable value ([B, k] int64)."""
        return torch.stack([CategoricalHead.mode(sub) for sub in dist], -1)

    @staticmethod
    def log_prob(dist: list[Categorical], action: torch.Tensor) -> torch.Tensor:
        # reduce, not sum: the same additions in the same order, without sum's int start that types as 0.
        return reduce(operator.add, (CategoricalHead.log_prob(sub, action[..., i]) for i, sub in enumerate(dist)))

    @staticmethod
    def entropy(dist: list[Categorical]) -> torch.Tensor:
        return reduce(operator.add, (CategoricalHead.entropy(sub) for sub in dist))

    @staticmethod
    def kl(old: list[Categorical], new: list[Categorical]) -> torch.Tensor:
        """KL(old || new) of each row ([B]), summed over the independent categoricals."""
        return reduce(operator.add, (CategoricalHead.kl(a, b) for a, b in zip(old, new)))


class BernoulliHead(nn.Module):
    """Independent Bernoulli policies over the bits of a 1-D ``MultiBinary(k)`` (as Stable-Baselines3's
    BernoulliDistribution), from ``k`` logits; actions are [B, k] int64 0/1. MultiBinary actions take
    no masks (the config refuses them): ``mask`` is always None here."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> Bernoulli:
        return Bernoulli(logits=self.net(obs), validate_args=False)

    @staticmethod
    def sample(dist: Bernoulli, generator: torch.Generator) -> torch.Tensor:
        """One action per row ([B, k] int64), drawn with ``generator``."""
        draw = draws.uniform(dist.logits, generator)
        return (draw < dist.probs).long()

    def draw(
        self, obs: torch.Tensor, mask: torch.Tensor | None, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(action, its log-probability [B]) at ``obs``, through the distribution :meth:`forward` gives."""
        return draw_through(self, obs, mask, generator)

    @staticmethod
    def mode(dist: Bernoulli) -> torch.Tensor:
        """Each bit's more probable value ([B, k] int64)."""
        return (dist.logits > 0).long()

    @staticmethod
    def log_prob(dist: Bernoulli, action: torch.Tensor) -> torch.Tensor:
        return dist.log_prob(action.to(dist.logits.dtype)).sum(-1)

    @staticmethod
    def entropy(dist: Bernoulli) -> torch.Tensor:
        return dist.entropy().sum(-1)

    @staticmethod
    def kl(old: Bernoulli, new: Bernoulli) -> torch.Tensor:
        """KL(old || new) of each row ([B]), summed over the independent bits."""
        return kl_divergence(old, new).sum(-1)
