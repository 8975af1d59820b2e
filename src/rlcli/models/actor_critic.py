"""A policy and a value critic over one observation normalizer, as on-policy methods use them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from gymnasium import spaces
from torch import nn

from rlcli import keys
from rlcli.models.critics import ValueCritic
from rlcli.models.heads import CategoricalHead, GaussianHead
from rlcli.models.mlp import mlp
from rlcli.normalization import ObservationNormalizer

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.build_context import BuildContext


class ActorCritic(nn.Module):
    """Separate policy and value MLPs; observations are normalized before both."""

    def __init__(self, obs_norm: ObservationNormalizer, policy: nn.Module, value: ValueCritic):
        super().__init__()
        self.obs_norm = obs_norm
        self.policy = policy
        self.value = value

    @torch.no_grad()
    def act(self, observation: torch.Tensor, generator: torch.Generator) -> TensorDict:
        """Sample actions for raw ``observation`` ([N, *obs]).

        Returns a [N] TensorDict with ``action``, ``log_prob`` and ``value``.
        """
        from tensordict import TensorDict

        obs = self.obs_norm(observation)
        dist = self.policy(obs)
        action = self.policy.sample(dist, generator)
        return TensorDict({keys.ACTION: action, keys.LOG_PROB: self.policy.log_prob(dist, action),
                           keys.VALUE: self.value(obs)}, batch_size=observation.shape[:1])

    @torch.no_grad()
    def actions(self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator) -> torch.Tensor:
        """Actions for raw ``observation`` ([N, *obs]): the distribution's mode when ``deterministic``
        (argmax, or the Gaussian's mean), else a sample drawn with ``generator``."""
        dist = self.policy(self.obs_norm(observation))
        return self.policy.mode(dist) if deterministic else self.policy.sample(dist, generator)

    def evaluate(
        self, obs: torch.Tensor, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log_prob, entropy, value), each [B], for normalized ``obs`` and taken ``action``."""
        dist = self.policy(obs)
        return self.policy.log_prob(dist, action), self.policy.entropy(dist), self.value(obs)


def build_actor_critic(ctx: BuildContext) -> ActorCritic:
    """Networks sized from ``ctx``'s spaces and shaped by its ``network`` section; observations
    normalized as its ``env`` section asks, with statistics pooled over its ranks."""
    network, action_space, obs_dim = ctx.network, ctx.action_space, ctx.obs_dim
    orthogonal = network.init == "orthogonal"
    if isinstance(action_space, spaces.Discrete):
        net = mlp(obs_dim, network.policy_sizes, int(action_space.n),
                  activation=network.activation, orthogonal=orthogonal, out_gain=0.01)
        policy: nn.Module = CategoricalHead(net)
    else:
        net = mlp(obs_dim, network.policy_sizes, ctx.act_dim,
                  activation=network.activation, orthogonal=orthogonal, out_gain=0.01)
        policy = GaussianHead(net, action_space, network.log_std_init)
    value = ValueCritic(mlp(obs_dim, network.value_sizes, 1,
                            activation=network.activation, orthogonal=orthogonal, out_gain=1.0))
    return ActorCritic(ctx.observation_normalizer(), policy, value)
