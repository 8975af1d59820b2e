"""Behaviour cloning: the policy regresses the dataset's actions (the baseline of every offline table).

Box actions take a deterministic, tanh-bounded actor trained by mean squared error (CORL's BC) or a
Gaussian with a tanh-bounded mean trained by negative log-likelihood; Discrete actions a categorical
policy trained by cross-entropy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from gymnasium import spaces as gspaces
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.algos.context import BuildContext
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import BCConfig
from rlcli.learning.off_policy import REPLAY_METRICS, ReplayLearner
from rlcli.models.actors import BoundedGaussianActor, DeterministicActor
from rlcli.models.heads import CategoricalHead
from rlcli.models.mlp import policy_mlp
from rlcli.models.normalization import ObservationNormalizer
from rlcli.replay import offline_replay
from rlcli.timing import Timer

if TYPE_CHECKING:
    from rlcli.carry import Carry


class DeterministicPolicy(nn.Module):
    """A tanh-bounded deterministic actor; its loss is the squared error to the action."""

    def __init__(self, actor: DeterministicActor):
        super().__init__()
        self.actor = actor

    def loss(self, inputs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """[B] mean squared error over the action's dimensions."""
        return (self.actor(inputs) - action).square().mean(-1)

    def act(self, inputs: torch.Tensor, *, deterministic: bool, generator: torch.Generator) -> torch.Tensor:
        return self.actor(inputs)


class GaussianPolicy(nn.Module):
    """A :class:`BoundedGaussianActor`; its loss is the negative log-likelihood of the action."""

    def __init__(self, actor: BoundedGaussianActor):
        super().__init__()
        self.actor = actor

    def loss(self, inputs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return -self.actor.log_prob(inputs, action)

    def act(self, inputs: torch.Tensor, *, deterministic: bool, generator: torch.Generator) -> torch.Tensor:
        return self.actor.act(inputs, deterministic=deterministic, generator=generator)


class CategoricalPolicy(nn.Module):
    """Logits over ``Discrete`` actions; its loss is the cross-entropy of the action."""

    def __init__(self, logits: nn.Module):
        super().__init__()
        self.head = CategoricalHead(logits)

    def loss(self, inputs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        dist = self.head(inputs)
        return -self.head.log_prob(dist, action)

    def act(self, inputs: torch.Tensor, *, deterministic: bool, generator: torch.Generator) -> torch.Tensor:
        dist = self.head(inputs)
        return self.head.mode(dist) if deterministic else self.head.sample(dist, generator)


BCPolicy = DeterministicPolicy | GaussianPolicy | CategoricalPolicy
"""A behaviour-cloning policy: its ``loss`` against the batch's actions, its ``act`` for evaluation."""


class BCAgent(nn.Module):
    """A policy over one observation normalizer (its statistics: the dataset's)."""

    # Memoryless: its policy reads only the carry's mask (rlcli.carry).
    memory = None

    def __init__(self, obs_norm: ObservationNormalizer, policy: BCPolicy):
        super().__init__()
        self.obs_norm = obs_norm
        self.policy = policy
        self.samples = not isinstance(policy, DeterministicPolicy)

    @torch.no_grad()
    def actions(
        self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator, carry: Carry | None = None
    ) -> torch.Tensor:
        """Evaluation actions for raw ``observation``: the policy's mode, or a sample."""
        return self.policy.act(self.obs_norm(observation), deterministic=deterministic, generator=generator)


def bc_loss(agent: BCAgent, batch: TensorDict) -> dict[str, torch.Tensor]:
    """The policy's loss on the batch's actions. Reads ``input`` and ``action``; returns ``loss/actor``."""
    return {"loss/actor": agent.policy.loss(batch[keys.INPUT], batch[keys.ACTION]).mean()}


class BC:
    """One policy step per gradient step, on a minibatch of the dataset."""

    def __init__(self, cfg: BCConfig, ctx: BuildContext, *, agent: BCAgent):
        self.cfg = cfg
        self.agent = agent
        self.replay = offline_replay(ctx, agent.obs_norm, gamma=None)
        self.step = ctx.gradient_step(agent.policy.parameters())
        self.learner = ReplayLearner(
            self.replay, {"actor_step": self.step}, batch_size=cfg.batch_size, seed=ctx.seed, total=TOTAL
        )
        self.ingest_and_sample = self.learner.ingest_and_sample

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """:func:`bc_loss` of a minibatch plus ``loss/total``, the scalar to minimise."""
        return self.learner.loss(bc_loss(self.agent, batch))

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """The iteration's gradient steps; returns their mean loss."""
        return self.learner.learn(batch, timer, self.update)

    def update(self, sample: TensorDict, timer: Timer) -> dict[str, torch.Tensor]:
        with timer.phase("update.forward"):
            terms = bc_loss(self.agent, sample)
        self.step(terms["loss/actor"], timer)
        return terms

    def state_dict(self, *, replay: bool = True) -> dict:
        return self.learner.state_dict(replay=replay)

    def load_state_dict(self, state: dict) -> None:
        self.learner.load_state_dict(state)


PHASES = ("update.extend", "update.sample", "update.forward", "update.backward", "update.optimizer")
METRICS = ("loss/actor", "loss/total", *REPLAY_METRICS)
# loss/total, for loss() and for the means learn() reports: these terms summed in this order (total_loss).
TOTAL = ("loss/actor",)


def build_agent(cfg: BCConfig, ctx: BuildContext) -> BCAgent:
    """The policy (``network.policy_sizes``) for ``ctx``'s action space and the observation statistics."""
    network = ctx.network
    encoder = ctx.encoder()
    space = ctx.action_space
    if isinstance(space, gspaces.Discrete):
        logits = nn.Sequential(
            encoder,
            policy_mlp(encoder.out_features, network, int(space.n)),
        )
        policy: BCPolicy = CategoricalPolicy(logits)
    else:
        net, box = policy_mlp(encoder.out_features, network, ctx.act_dim), ctx.box_actions
        policy = (
            DeterministicPolicy(DeterministicActor(encoder, net, box))
            if cfg.policy == "deterministic"
            else GaussianPolicy(BoundedGaussianActor(encoder, net, box, log_std_init=network.log_std_init))
        )
    return BCAgent(ctx.observation_normalizer(), policy).to(ctx.device)


def build(cfg: BCConfig, ctx: BuildContext) -> BC:
    """BC for ``ctx``'s spaces and dataset: the agent of :func:`build_agent`, its optimizer and the dataset."""
    return BC(cfg, ctx, agent=build_agent(cfg, ctx))


SPEC = AlgorithmSpec(
    config=BCConfig,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    metrics=METRICS,
    total=TOTAL,
)
