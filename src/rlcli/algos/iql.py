"""Implicit Q-Learning (Kostrikov et al., 2021): offline, never querying an action outside the dataset.

A state value V is fitted by expectile regression to the target critics' minimum at the dataset's
actions; the critics regress ``r + gamma * V(s')``; the policy regresses the dataset's actions,
weighted by ``exp(beta * (Q - V))`` clipped at ``max_weight`` (advantage-weighted regression).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import torch
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.algos.context import BuildContext
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import IQLConfig
from rlcli.learning.advantages import bootstrapped_target
from rlcli.learning.off_policy import (
    REPLAY_METRICS,
    UNPRIORITIZED_PHASES,
    UNTIMED,
    ReplayLearner,
    Step,
    Untimed,
)
from rlcli.learning.target_networks import TargetSchedule
from rlcli.models.actors import BoundedGaussianActor
from rlcli.models.critics import QEnsemble, ValueCritic, critic_regression
from rlcli.models.mlp import mlp, policy_mlp
from rlcli.models.normalization import ObservationNormalizer
from rlcli.replay import offline_replay
from rlcli.timing import Timer

if TYPE_CHECKING:
    from rlcli.carry import Carry


class IQLAgent(nn.Module):
    """Policy, value, critic ensemble and its target over one observation normalizer."""

    # Memoryless: its policy reads only the carry's mask (rlcli.carry).
    memory = None
    samples = True

    def __init__(
        self, obs_norm: ObservationNormalizer, actor: BoundedGaussianActor, value: ValueCritic, critic: QEnsemble
    ):
        super().__init__()
        self.obs_norm = obs_norm
        self.actor = actor
        self.value = value
        self.critic = critic
        self.critic_target = copy.deepcopy(critic).requires_grad_(False)

    @torch.no_grad()
    def actions(
        self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator, carry: Carry | None = None
    ) -> torch.Tensor:
        """Evaluation actions [N, A] for raw ``observation``: the policy's mean, or a sample (the caller clips)."""
        return self.actor.act(self.obs_norm(observation), deterministic=deterministic, generator=generator)


def expectile_loss(difference: torch.Tensor, expectile: float) -> torch.Tensor:
    """``mean |expectile - 1(u < 0)| * u^2`` over ``difference`` u = Q - V ([B]): the asymmetric squared
    loss whose minimiser is the ``expectile`` of Q (Kostrikov et al., 2021, eq. 5)."""
    weight = torch.where(difference < 0, 1.0 - expectile, expectile)
    return (weight * difference.square()).mean()


def iql_value_loss(agent: IQLAgent, batch: TensorDict, *, expectile: float) -> dict[str, torch.Tensor]:
    """Expectile regression of V(s) to the target critics' minimum at the dataset's action.

    Reads ``input`` and ``action``. Returns ``loss/value``, ``stats/v_mean`` and ``advantage``
    ([B], detached: ``min Q'(s, a) - V(s)``, which the actor's weights read).
    """
    with torch.no_grad():
        q = agent.critic_target(batch[keys.INPUT], batch[keys.ACTION]).min(0).values
    v = agent.value(batch[keys.INPUT])
    difference = q - v
    return {
        "loss/value": expectile_loss(difference, expectile),
        "stats/v_mean": v.detach().mean(),
        "advantage": difference.detach(),
    }


def iql_critic_loss(agent: IQLAgent, batch: TensorDict, *, gamma: float) -> dict[str, torch.Tensor]:
    """Every critic regresses ``r + gamma * (1 - terminated) * V(s')``. Reads ``input``, ``action``,
    ``reward``, ``next_input`` and ``terminated``; returns ``loss/critic``, ``stats/q_mean`` and
    ``stats/td_abs``."""
    with torch.no_grad():
        target = bootstrapped_target(batch, agent.value(batch[keys.NEXT_INPUT]), gamma=gamma)
    terms = critic_regression(agent.critic(batch[keys.INPUT], batch[keys.ACTION]), target, batch)
    terms.pop("td_error")
    return terms


def iql_actor_loss(
    agent: IQLAgent, batch: TensorDict, advantage: torch.Tensor, *, beta: float, max_weight: float
) -> dict[str, torch.Tensor]:
    """Advantage-weighted regression: ``-mean min(exp(beta * A), max_weight) * log pi(a|s)``.

    Reads ``input`` and ``action``; ``advantage`` [B] is detached. Returns ``loss/actor`` and
    ``stats/weight_mean``.
    """
    weight = torch.exp(beta * advantage).clamp(max=max_weight)
    log_prob = agent.actor.log_prob(batch[keys.INPUT], batch[keys.ACTION])
    return {"loss/actor": -(weight * log_prob).mean(), "stats/weight_mean": weight.mean()}


class IQL:
    """Each gradient step: the value step, the critic step (on V as just updated), the actor step
    (on the advantages the value step saw) and a Polyak update of the target critics."""

    def __init__(self, cfg: IQLConfig, ctx: BuildContext, *, agent: IQLAgent):
        self.cfg = cfg
        self.agent = agent
        self.replay = offline_replay(ctx, agent.obs_norm, gamma=cfg.gamma)
        self.value_step = ctx.gradient_step(agent.value.parameters())
        self.critic_step = ctx.gradient_step(agent.critic.parameters())
        self.actor_step = ctx.gradient_step(agent.actor.parameters())
        self.learner = ReplayLearner(
            self.replay,
            {"value_step": self.value_step, "critic_step": self.critic_step, "actor_step": self.actor_step},
            batch_size=cfg.batch_size,
            seed=ctx.seed,
            total=TOTAL,
        )
        self.ingest_and_sample = self.learner.ingest_and_sample
        self.target = TargetSchedule(agent.critic_target, agent.critic, tau=cfg.tau, interval=1)

    def terms(
        self,
        sample: TensorDict,
        timer: Timer | Untimed = UNTIMED,
        *,
        value_step: Step | None = None,
        critic_step: Step | None = None,
    ) -> dict[str, torch.Tensor]:
        """IQL's terms of a normalized ``sample``: the value's (:func:`iql_value_loss`), the critics' (on V
        after ``value_step``) and the actor's (on the advantages the value's terms saw, after ``critic_step``).
        ``update`` passes both steps, each taken on its loss; ``loss`` passes none: all on the same weights."""
        cfg = self.cfg
        with timer.phase("update.forward"):
            terms = iql_value_loss(self.agent, sample, expectile=cfg.expectile)
        advantage = terms.pop("advantage")
        if value_step is not None:
            value_step(terms["loss/value"])
        with timer.phase("update.forward"):
            terms |= iql_critic_loss(self.agent, sample, gamma=cfg.gamma)
        if critic_step is not None:
            critic_step(terms["loss/critic"])
        with timer.phase("update.forward"):
            terms |= iql_actor_loss(self.agent, sample, advantage, beta=cfg.beta, max_weight=cfg.max_weight)
        return terms

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """:meth:`terms` of one minibatch, value's, critics' and actor's, plus ``loss/total``, their sum."""
        return self.learner.loss(self.terms(batch))

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """The iteration's gradient steps; returns each term's mean over them."""
        return self.learner.learn(batch, timer, self.update)

    def update(self, sample: TensorDict, timer: Timer) -> dict[str, torch.Tensor]:
        """The value, critic and actor steps on a normalized ``sample``, then the target update; returns the
        loss terms."""
        terms = self.terms(
            sample,
            timer,
            value_step=lambda loss: self.value_step(loss, timer),
            critic_step=lambda loss: self.critic_step(loss, timer),
        )
        self.actor_step(terms["loss/actor"], timer)
        with timer.phase("update.target"):
            self.target.step()
        return terms

    def state_dict(self, *, replay: bool = True) -> dict:
        return self.learner.state_dict(replay=replay) | {"target": self.target.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.learner.load_state_dict(state)
        self.target.load_state_dict(state["target"])


PHASES = UNPRIORITIZED_PHASES
METRICS = (
    "loss/value",
    "loss/critic",
    "loss/actor",
    "loss/total",
    "stats/q_mean",
    "stats/v_mean",
    "stats/weight_mean",
    "stats/td_abs",
    *REPLAY_METRICS,
)
# loss/total, for loss() and for the means learn() reports: these terms summed in this order (total_loss).
TOTAL = ("loss/value", "loss/critic", "loss/actor")


def build_agent(cfg: IQLConfig, ctx: BuildContext) -> IQLAgent:
    """The Gaussian policy (``network.policy_sizes``), the value and ``num_critics`` critics
    (``value_sizes`` each), the target critics and the observation statistics, on the device."""
    network = ctx.network
    orthogonal = network.init == "orthogonal"
    encoder = ctx.encoder()
    actor = BoundedGaussianActor(
        encoder,
        policy_mlp(encoder.out_features, network, ctx.act_dim),
        ctx.box_actions,
        log_std_init=network.log_std_init,
    )
    value_encoder = ctx.encoder()
    value = ValueCritic(
        nn.Sequential(
            value_encoder,
            mlp(
                value_encoder.out_features,
                network.value_sizes,
                1,
                activation=network.activation,
                orthogonal=orthogonal,
                out_gain=1.0,
            ),
        )
    )
    critic = QEnsemble(cfg.num_critics, ctx.encoder(), ctx.act_dim, network.value_sizes, activation=network.activation)
    return IQLAgent(ctx.observation_normalizer(), actor, value, critic).to(ctx.device)


def build(cfg: IQLConfig, ctx: BuildContext) -> IQL:
    """IQL for ``ctx``'s spaces (a Box action space) and dataset: the agent, its three optimizers and the dataset."""
    return IQL(cfg, ctx, agent=build_agent(cfg, ctx))


SPEC = AlgorithmSpec(
    config=IQLConfig,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    metrics=METRICS,
    total=TOTAL,
)
