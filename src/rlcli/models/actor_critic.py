"""A policy and a value critic over one observation normalizer and encoder, as on-policy methods use them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from gymnasium import spaces
from torch import nn

from rlcli import keys
from rlcli.carry import Carry
from rlcli.models.critics import ValueCritic
from rlcli.models.encoders import KeyEncoder, build_encoder
from rlcli.models.ensemble import AgentsApart
from rlcli.models.gsde import StateDependentHead, state_dependent_noise
from rlcli.models.heads import BernoulliHead, CategoricalHead, GaussianHead, MultiCategoricalHead, PolicyHead
from rlcli.models.memory import MemoryCore
from rlcli.models.mlp import mlp, policy_mlp
from rlcli.models.normalization import KeyedNormalizer, ObservationNormalizer

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.algos.context import BuildContext
    from rlcli.carry import Carry
    from rlcli.models.encoders import Encoder


class ActorCritic(nn.Module):
    """Policy and value MLPs over the features of one shared encoder (or, with ``value_encoder``, the
    value over its own), with ``memory`` (a :class:`MemoryCore`) between the encoders and the MLPs when
    the policy has one; observations are normalized before the encoders."""

    samples = True

    def __init__(
        self,
        obs_norm: ObservationNormalizer | KeyedNormalizer,
        encoder: Encoder,
        policy: PolicyHead[Any],
        value: ValueCritic,
        value_encoder: Encoder | None = None,
        memory: MemoryCore | None = None,
    ):
        super().__init__()
        self.obs_norm = obs_norm
        self.encoder = encoder
        # Any: each head has a distribution type of its own, which this class only passes from the head's
        # call back into the same head's functions; Python's types cannot say "some one type" (existential).
        self.policy: PolicyHead[Any] = policy
        self.value = value
        self.value_encoder = value_encoder
        self.memory = memory

    def features(self, obs) -> tuple[torch.Tensor, torch.Tensor]:
        """(policy features, value features), each [*B, F] float32, of normalized ``obs`` (before any memory)."""
        shared = self.encoder(obs)
        return shared, shared if self.value_encoder is None else self.value_encoder(obs)

    def networks(self) -> list[list[nn.Parameter]]:
        """The weights in two parts, the policy's (with a shared encoder and memory) and the value's (its own
        encoder and head): what ``[optim] clip_scope = "networks"`` clips apart."""
        value = {
            id(p) for module in (self.value, self.value_encoder) if module is not None for p in module.parameters()
        }
        every = list(self.parameters())
        return [[p for p in every if id(p) not in value], [p for p in every if id(p) in value]]

    def state_value(self, obs) -> torch.Tensor:
        """V of normalized ``obs`` ([B]), for a memoryless policy."""
        return self.value((self.encoder if self.value_encoder is None else self.value_encoder)(obs))

    def _step(self, obs, carry: Carry) -> tuple[torch.Tensor, torch.Tensor]:
        """(policy features, value features) [N, F] of normalized ``obs`` [N, ...] for the step: through
        the memory, whose state in ``carry`` moves one step on."""
        policy, value = self.features(obs)
        if self.memory is None:
            return policy, value
        # A carry made for an agent with memory (Carry.of) always holds ``first``.
        assert carry.first is not None
        policy, value, carry.memory = self.memory(policy[None], value[None], carry.first[None], carry.memory)
        return policy[0], value[0]

    def _carry(self, carry: Carry | None, n: int) -> Carry:
        """``carry``, or for None a carry of ``n`` fresh envs without masks."""
        return Carry.of(self, n, next(self.parameters()).device) if carry is None else carry

    @torch.no_grad()
    def act(
        self,
        observation: torch.Tensor,
        generator: torch.Generator,
        carry: Carry | None = None,
        *,
        noise: torch.Tensor | None = None,
    ) -> TensorDict:
        """Sample actions for raw ``observation`` ([N, *obs]) under ``carry``'s masks and memory; with
        ``noise`` (a gSDE head's held matrices, [N, L, A]) the action is its mean plus that noise.

        Returns a [N] TensorDict with ``action``, ``log_prob`` and ``value``; with memory also
        ``memory`` and ``first``, the state the step started from (the update re-runs it).
        """
        from tensordict import TensorDict

        n = observation.shape[0]
        carry = self._carry(carry, n)
        out: dict[str, torch.Tensor] = {}
        if self.memory is not None:
            # A carry made for an agent with memory (Carry.of) always holds its state and ``first``.
            assert carry.memory is not None and carry.first is not None
            out = {keys.MEMORY: carry.memory, keys.FIRST: carry.first.clone()}
        policy_features, value_features = self._step(self.obs_norm(observation), carry)
        if noise is None:
            action, log_prob = self.policy.draw(policy_features, carry.mask, generator)
        else:
            # Held noise matrices exist only for a gSDE head (the on-policy learner draws them from its noise).
            assert isinstance(self.policy, StateDependentHead)
            dist = self.policy(policy_features, carry.mask)
            action = self.policy.perturb(dist, noise)
            log_prob = self.policy.log_prob(dist, action)
        out[keys.ACTION] = action
        out[keys.LOG_PROB] = log_prob
        out[keys.VALUE] = self.value(value_features)
        return TensorDict(out, batch_size=[n])

    @torch.no_grad()
    def actions(
        self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator, carry: Carry | None = None
    ) -> torch.Tensor:
        """Actions for raw ``observation`` ([N, *obs]) under ``carry``'s masks and memory: the
        distribution's mode when ``deterministic`` (argmax, or the Gaussian's mean), else a sample drawn
        with ``generator``."""
        if self.memory is None:
            mask = None if carry is None else carry.mask
            dist = self.policy(self.encoder(self.obs_norm(observation)), mask)
        else:
            carry = self._carry(carry, observation.shape[0])
            dist = self.policy(self._step(self.obs_norm(observation), carry)[0], carry.mask)
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
        """(log_prob, entropy, value), each [*B], for normalized ``obs`` and taken ``action``, under the
        action ``mask`` they were taken with ([*B, *mask] bool) when the run has masks.

        With memory the rows are sequences, time first ([L, B]): the memory is re-run over them from
        ``memory[0]`` ([B, *state], the state stored when acting on their first step), zeroed where
        ``first`` ([L, B] bool) says an episode starts, as acting did (backpropagation through time).
        """
        policy_features, value_features = self.features(obs)
        if self.memory is not None:
            # The learner passes the stored memory whenever the policy has one (its rows are sequences).
            assert memory is not None
            policy_features, value_features, _ = self.memory(policy_features, value_features, first, memory[0])
        dist = self.policy(policy_features, mask)
        return self.policy.log_prob(dist, action), self.policy.entropy(dist), self.value(value_features)

    @torch.no_grad()
    def successor_value(self, obs, first: torch.Tensor, memory: torch.Tensor, next_obs) -> torch.Tensor:
        """V of ``next_obs`` ([R, ...] normalized) with the memory after acting on ``obs`` from ``memory``
        ([R, *state]) and ``first`` ([R] bool): the bootstrap value of a rollout's last step or of an
        episode's final observation, for a policy with memory ([R])."""
        # Only next_values of a policy with memory calls this (through _recurrent_next_values).
        assert self.memory is not None
        policy, value = self.features(obs)
        _, _, after = self.memory(policy[None], value[None], first[None], memory)
        policy, value = self.features(next_obs)
        _, value, _ = self.memory(policy[None], value[None], torch.zeros_like(first)[None], after)
        return self.value(value[0])


def build_actor_critic(ctx: BuildContext, *, gsde: bool = False) -> ActorCritic:
    """Networks sized from ``ctx``'s spaces and shaped by its ``network`` section (one encoder for
    both heads unless ``share_encoder`` is off; a memory core after the encoders when ``memory`` asks for
    one; a gSDE head over Box actions with ``gsde``); observations normalized as its ``env`` section
    asks, with statistics pooled over its ranks."""
    network = ctx.network
    if ctx.critic_space is not None:
        return _centralized(ctx, gsde=gsde)
    encoder = ctx.encoder()
    value_encoder = None if network.share_encoder else ctx.encoder()
    memory = None
    if network.memory != "none":
        inputs: tuple[int, ...] = (encoder.out_features,)
        if not network.memory_shared:
            inputs += ((value_encoder or encoder).out_features,)
        memory = MemoryCore(network.memory, inputs, size=network.memory_size, layers=network.memory_layers)
    obs_dim = encoder.out_features if memory is None else memory.out_features
    policy = _policy_head(ctx, obs_dim, gsde=gsde)
    return ActorCritic(ctx.observation_normalizer(), encoder, policy, _value(ctx, obs_dim), value_encoder, memory)


def _value(ctx: BuildContext, in_features: int) -> ValueCritic:
    """The value MLP over ``in_features`` features, as ``[network]`` shapes it."""
    network = ctx.network
    orthogonal = network.init == "orthogonal"
    return ValueCritic(
        _apart(
            ctx,
            lambda: mlp(
                in_features, network.value_sizes, 1, activation=network.activation, orthogonal=orthogonal, out_gain=1.0
            ),
        )
    )


def _centralized(ctx: BuildContext, *, gsde: bool) -> ActorCritic:
    """A team agent's policy over its ``observation`` and a centralized critic over its ``critic`` input
    (``ctx.critic_space``), each with an encoder and normalization statistics of its own."""
    network = ctx.network
    assert ctx.critic_space is not None, "only for a centralized critic"
    encoder = KeyEncoder("observation", ctx.encoder())
    value_encoder = KeyEncoder("critic", build_encoder(ctx.critic_space, network))
    policy = _policy_head(ctx, encoder.out_features, gsde=gsde)
    value = _value(ctx, value_encoder.out_features)
    critic_norm = ObservationNormalizer(
        ctx.critic_space.shape,
        enabled=ctx.env.normalize_observation,
        clip=ctx.env.clip_observation,
        group=ctx.group,
    )
    norm = KeyedNormalizer({"observation": ctx.observation_normalizer(), "critic": critic_norm})
    return ActorCritic(norm, encoder, policy, value, value_encoder)


def _policy_head(ctx: BuildContext, obs_dim: int, *, gsde: bool) -> PolicyHead[Any]:
    """The policy MLP over ``obs_dim`` features and the head for ``ctx``'s action space: categorical
    (Discrete), independent categoricals (MultiDiscrete), Bernoulli (MultiBinary) or Gaussian (Box;
    with ``gsde`` the state-dependent one, check_spaces having refused gSDE for other spaces)."""
    network, space = ctx.network, ctx.action_space
    if gsde:
        net = policy_mlp(obs_dim, network, ctx.act_dim)
        out = net[-1]
        # policy_mlp ends in its linear output layer, whose inputs are the latent features gSDE scales.
        assert isinstance(out, nn.Linear)
        return StateDependentHead(net, state_dependent_noise(network, out.in_features, ctx.act_dim))
    if isinstance(space, spaces.Discrete):
        return CategoricalHead(_apart(ctx, lambda: policy_mlp(obs_dim, network, int(space.n))))
    if isinstance(space, spaces.MultiDiscrete):
        return MultiCategoricalHead(_apart(ctx, lambda: policy_mlp(obs_dim, network, int(space.nvec.sum()))), space)
    if isinstance(space, spaces.MultiBinary):
        return BernoulliHead(_apart(ctx, lambda: policy_mlp(obs_dim, network, ctx.act_dim)))
    # check_spaces admits no other action space for an actor-critic: what is left is a Box.
    return GaussianHead(
        _apart(ctx, lambda: policy_mlp(obs_dim, network, ctx.act_dim)), ctx.box_actions, network.log_std_init
    )


def _apart(ctx: BuildContext, make: Callable[[], nn.Sequential]) -> nn.Module:
    """The MLP ``make`` builds, or for a team group whose agents have their own weights one per agent, batched
    (:class:`~rlcli.models.ensemble.AgentsApart`)."""
    if ctx.agents_apart == 1:
        return make()
    return AgentsApart([make() for _ in range(ctx.agents_apart)])
