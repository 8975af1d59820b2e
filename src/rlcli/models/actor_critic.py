"""A policy and a value critic over one observation normalizer and encoder, as on-policy methods use them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from gymnasium import spaces
from torch import nn

from rlcli import keys
from rlcli.models.critics import ValueCritic
from rlcli.models.heads import BernoulliHead, CategoricalHead, GaussianHead, MultiCategoricalHead
from rlcli.models.mlp import mlp, policy_mlp
from rlcli.normalization import ObservationNormalizer

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.build_context import BuildContext
    from rlcli.carry import Carry


class ActorCritic(nn.Module):
    """Policy and value MLPs over the features of one shared encoder (or, with ``value_encoder``, the
    value over its own); observations are normalized before the encoders."""

    def __init__(
        self,
        obs_norm: ObservationNormalizer,
        encoder: nn.Module,
        policy: nn.Module,
        value: ValueCritic,
        value_encoder: nn.Module | None = None,
    ):
        super().__init__()
        self.obs_norm = obs_norm
        self.encoder = encoder
        self.policy = policy
        self.value = value
        self.value_encoder = value_encoder
        self.memory = None

    def features(self, obs) -> tuple[torch.Tensor, torch.Tensor]:
        """(policy features, value features), each [B, F] float32, of normalized ``obs``."""
        shared = self.encoder(obs)
        return shared, shared if self.value_encoder is None else self.value_encoder(obs)

    def state_value(self, obs) -> torch.Tensor:
        """V of normalized ``obs`` ([B])."""
        return self.value((self.encoder if self.value_encoder is None else self.value_encoder)(obs))

    @torch.no_grad()
    def act(self, observation: torch.Tensor, generator: torch.Generator, carry: Carry | None = None) -> TensorDict:
        """Sample actions for raw ``observation`` ([N, *obs]) under ``carry``'s masks.

        Returns a [N] TensorDict with ``action``, ``log_prob`` and ``value``.
        """
        from tensordict import TensorDict

        mask = None if carry is None else carry.mask
        policy_features, value_features = self.features(self.obs_norm(observation))
        dist = self.policy(policy_features, mask)
        action = self.policy.sample(dist, generator)
        return TensorDict(
            {
                keys.ACTION: action,
                keys.LOG_PROB: self.policy.log_prob(dist, action),
                keys.VALUE: self.value(value_features),
            },
            batch_size=observation.shape[:1],
        )

    @torch.no_grad()
    def actions(
        self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator, carry: Carry | None = None
    ) -> torch.Tensor:
        """Actions for raw ``observation`` ([N, *obs]) under ``carry``'s masks: the distribution's mode
        when ``deterministic`` (argmax, or the Gaussian's mean), else a sample drawn with ``generator``."""
        mask = None if carry is None else carry.mask
        dist = self.policy(self.encoder(self.obs_norm(observation)), mask)
        return self.policy.mode(dist) if deterministic else self.policy.sample(dist, generator)

    def evaluate(
        self,
        obs: torch.Tensor,
        action: torch.Tensor,
        *,
        mask: torch.Tensor | None = None,
        memory: torch.Tensor | None = None,
        first: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log_prob, entropy, value), each [B], for normalized ``obs`` and taken ``action``, under the
        action ``mask`` they were taken with ([B, *mask] bool) when the run has masks."""
        policy_features, value_features = self.features(obs)
        dist = self.policy(policy_features, mask)
        return self.policy.log_prob(dist, action), self.policy.entropy(dist), self.value(value_features)


def build_actor_critic(ctx: BuildContext) -> ActorCritic:
    """Networks sized from ``ctx``'s spaces and shaped by its ``network`` section (one encoder for
    both heads unless ``share_encoder`` is off); observations normalized as its ``env`` section
    asks, with statistics pooled over its ranks."""
    network = ctx.network
    encoder = ctx.encoder()
    value_encoder = None if network.share_encoder else ctx.encoder()
    obs_dim = encoder.out_features
    orthogonal = network.init == "orthogonal"
    policy = _policy_head(ctx, obs_dim)
    value = ValueCritic(
        mlp(obs_dim, network.value_sizes, 1, activation=network.activation, orthogonal=orthogonal, out_gain=1.0)
    )
    return ActorCritic(ctx.observation_normalizer(), encoder, policy, value, value_encoder)


def _policy_head(ctx: BuildContext, obs_dim: int) -> nn.Module:
    """The policy MLP over ``obs_dim`` features and the head for ``ctx``'s action space: categorical
    (Discrete), independent categoricals (MultiDiscrete), Bernoulli (MultiBinary) or Gaussian (Box)."""
    network, space = ctx.network, ctx.action_space
    if isinstance(space, spaces.Discrete):
        return CategoricalHead(policy_mlp(obs_dim, network, int(space.n)))
    if isinstance(space, spaces.MultiDiscrete):
        return MultiCategoricalHead(policy_mlp(obs_dim, network, int(space.nvec.sum())), space)
    if isinstance(space, spaces.MultiBinary):
        return BernoulliHead(policy_mlp(obs_dim, network, ctx.act_dim))
    return GaussianHead(policy_mlp(obs_dim, network, ctx.act_dim), space, network.log_std_init)
