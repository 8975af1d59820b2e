"""Soft Actor-Critic (Haarnoja et al., 2018) with an automatically tuned temperature, on a
batched critic ensemble; with ``num_critics`` = 10, ``critic_subset`` = 2, ``actor_q = "mean"``
and a high ``utd_ratio`` it is REDQ (Chen et al., 2021)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import torch
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.algos.context import BuildContext
from rlcli.algos.settings import EnsembleSettings, SquashedSettings
from rlcli.algos.spec import AlgorithmSpec
from rlcli.algos.temperature import Tempered, actor_objective, actor_parameters, entropy_target
from rlcli.config.algos import SACConfig
from rlcli.learning.advantages import bootstrapped_target
from rlcli.learning.off_policy import (
    REPLAY_METRICS,
    REPLAY_PHASES,
    UNTIMED,
    CriticStep,
    ReplayLearner,
    Untimed,
)
from rlcli.learning.target_networks import TargetSchedule
from rlcli.models.actors import SquashedGaussianActor
from rlcli.models.critics import QEnsemble, critic_regression
from rlcli.models.gsde import NoiseSchedule, SquashedStateDependentActor, state_dependent_noise
from rlcli.models.mlp import policy_mlp
from rlcli.models.normalization import ObservationNormalizer
from rlcli.replay import OffPolicyReplay, box_replay
from rlcli.timing import Timer

if TYPE_CHECKING:
    from rlcli.carry import Carry


class SACAgent(nn.Module):
    """Actor, critic ensemble, its target and the log-temperature over one observation normalizer."""

    # Memoryless: its policy reads only the carry's mask (rlcli.carry).
    memory = None
    samples = True

    def __init__(
        self,
        obs_norm: ObservationNormalizer,
        actor: SquashedGaussianActor | SquashedStateDependentActor,
        critic: QEnsemble,
        alpha: float,
    ):
        super().__init__()
        self.obs_norm = obs_norm
        self.actor = actor
        self.critic = critic
        self.critic_target = copy.deepcopy(critic).requires_grad_(False)
        self.log_alpha = nn.Parameter(torch.tensor(float(np.log(alpha))))

    @torch.no_grad()
    def actions(
        self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator, carry: Carry | None = None
    ) -> torch.Tensor:
        """Evaluation actions [N, A] in the Box bounds for raw ``observation`` [N, obs]: the squashed
        mean, or a squashed sample (never the warm-up's uniform actions)."""
        action, _ = self.actor(self.obs_norm(observation), generator, deterministic=deterministic)
        return action


def critic_targets(q_next: torch.Tensor, subset: torch.Tensor | None) -> torch.Tensor:
    """The minimum over the critics of ``q_next`` ([E, B]), or over the rows in ``subset`` ([M] int64)."""
    if subset is not None:
        q_next = q_next.index_select(0, subset)
    return q_next.min(0).values


def sac_critic_loss(
    agent: SACAgent,
    batch: TensorDict,
    next_action: torch.Tensor,
    next_log_prob: torch.Tensor,
    *,
    gamma: float,
    alpha: torch.Tensor,
    subset: torch.Tensor | None,
) -> dict[str, torch.Tensor]:
    """Soft Bellman loss of every critic: ``0.5 * sum_e mean_b (Q_e(s, a) - y)^2`` with
    ``y = r + discount * (1 - terminated) * (min_{e in subset} Q'_e(s', a') - alpha * log pi(a'|s'))``.

    Reads ``input``, ``action``, ``reward``, ``next_input``, ``terminated`` and, when present,
    ``discount`` and ``weight``, each [B, ...]; ``next_action`` [B, A] and ``next_log_prob`` [B]
    are the actor's sample for ``next_input`` (no gradient is taken through them). Returns
    ``loss/critic``, ``stats/q_mean``, ``stats/td_abs`` and ``td_error`` ([B], detached, the
    mean over critics, for priorities).
    """
    with torch.no_grad():
        next_action, next_log_prob = next_action.detach(), next_log_prob.detach()
        q_next = critic_targets(agent.critic_target(batch[keys.NEXT_INPUT], next_action), subset)
        target = bootstrapped_target(batch, q_next - alpha * next_log_prob, gamma=gamma)
    return critic_regression(agent.critic(batch[keys.INPUT], batch[keys.ACTION]), target, batch)


def sac_actor_loss(
    agent: Tempered,
    batch: TensorDict,
    action: torch.Tensor,
    log_prob: torch.Tensor,
    *,
    alpha: torch.Tensor,
    actor_q: str,
    target_entropy: float,
) -> dict[str, torch.Tensor]:
    """Actor loss ``mean(alpha * log pi(a|s) - Q(s, a))``, and the temperature loss
    ``-mean(log_alpha * (log pi(a|s) + target_entropy))``.

    Reads ``input`` [B, obs]; ``action`` [B, A] and ``log_prob`` [B] are the actor's
    reparameterized sample for it. Returns ``loss/actor``, ``loss/alpha`` and ``stats/entropy``.
    The critics' weights get no gradient from the actor loss.
    """
    with agent.critic.frozen():
        q = agent.critic(batch[keys.INPUT], action)
    if q.dim() == 3:
        # Quantile critics (TQC): each critic's value is the mean of its quantiles.
        q = q.mean(-1)
    q_pi = q.min(0).values if actor_q == "min" else q.mean(0)
    actor = (alpha * log_prob - q_pi).mean()
    temperature = -(agent.log_alpha * (log_prob.detach() + target_entropy)).mean()
    return {"loss/actor": actor, "loss/alpha": temperature, "stats/entropy": -log_prob.detach().mean()}


CriticLoss = Callable[..., dict[str, torch.Tensor]]
"""A critic ensemble's loss of a minibatch, called as :func:`sac_critic_loss` is: ``(agent, batch,
next_action, next_log_prob, *, gamma, alpha, subset)``, returning ``loss/critic`` and ``td_error``
among its terms."""


@dataclass(frozen=True)
class Critics:
    """How SAC's machinery uses its critics, by SAC's (REDQ's) fields or TQC's fixed choices: ``loss``, ``subset``
    (critics drawn for each target's minimum, REDQ's M; None or all: every critic) and ``actor_q``."""

    loss: CriticLoss = sac_critic_loss
    subset: int | None = None
    actor_q: Literal["min", "mean"] = "min"


class SAC:
    """Uniform actions during warm-up, then the actor's samples; each batch extends the buffer,
    then ``utd_ratio`` critic steps per frame, an actor and temperature step every
    ``policy_delay`` of them, and Polyak updates of the target critics.

    ``critic_loss`` is :func:`sac_critic_loss` for SAC and REDQ, the truncated quantile loss for TQC
    (:mod:`rlcli.algos.tqc`), which shares everything else."""

    def __init__(
        self, cfg: SquashedSettings, ctx: BuildContext, critics: Critics, *, agent: SACAgent, replay: OffPolicyReplay
    ):
        self.cfg = cfg
        self.critics = critics
        self.agent = agent
        self.replay = replay
        self.critic_step = ctx.gradient_step(agent.critic.parameters())
        self.actor_step = ctx.gradient_step(actor_parameters(agent, cfg.autotune_alpha))
        self.learner = ReplayLearner(
            replay,
            {"critic_step": self.critic_step, "actor_step": self.actor_step},
            batch_size=cfg.batch_size,
            seed=ctx.seed,
            total=TOTAL,
        )
        self.ingest_and_sample = self.learner.ingest_and_sample
        self.target = TargetSchedule(
            agent.critic_target, agent.critic, tau=cfg.tau, interval=cfg.target_update_interval
        )
        self.target_entropy = entropy_target(cfg.target_entropy, ctx.act_dim)
        self.bounds = ctx.action_bounds()
        self.device = ctx.device
        # Actions and target noise are drawn on the training device.
        self.noise_generator = ctx.noise_generator()
        self.updates = 0
        # exploration_hold: each env's standard-normal draw and the collection steps it has served.
        self.held: torch.Tensor | None = None
        self.held_steps = 0
        # gSDE: the noise matrices collection holds, drawn at each rollout's start (each collection of
        # frames_per_batch, SB3's train_freq) and every sde_sample_freq steps.
        self.exploration: NoiseSchedule | None = None
        if cfg.use_sde:
            assert isinstance(agent.actor, SquashedStateDependentActor), "use_sde builds gSDE's actor"
            self.exploration = NoiseSchedule(
                agent.actor.noise,
                rollout_steps=ctx.collector.frames_per_batch // ctx.env.num_envs,
                sample_freq=cfg.sde_sample_freq,
            )

    @property
    def alpha(self) -> torch.Tensor:
        return self.agent.log_alpha.detach().exp()

    def act(self, observation: torch.Tensor, generator: torch.Generator, carry: Carry | None = None) -> TensorDict:
        """``action`` [N, A] in the Box bounds for raw ``observation`` [N, obs]: uniform in the bounds
        during the warm-up, then sampled from the squashed Gaussian (with gSDE: its held noise matrices, drawn
        when due during the warm-up too, as Stable-Baselines3 does)."""
        if self.exploration is not None:
            matrices = self.exploration(observation.shape[0], generator)
            agent = self.agent
            return self.learner.act(
                observation, generator, self.bounds, lambda obs: agent.actor(agent.obs_norm(obs), noise=matrices)[0]
            )
        return self.learner.act(observation, generator, self.bounds, lambda obs: self._explore(obs, generator))

    def _explore(self, observation: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """The actor's sample for each env; with ``exploration_hold`` > 1 its standard-normal draw is
        kept for that many calls (drawn afresh when the number of envs changes)."""
        hold = self.cfg.exploration_hold
        if hold == 1:
            return self.agent.actor(self.agent.obs_norm(observation), generator)[0]
        shape = (observation.shape[0], len(self.bounds.low))
        if self.held is None or self.held.shape != shape or self.held_steps >= hold:
            self.held = torch.randn(shape, generator=generator, device=observation.device)
            self.held_steps = 0
        self.held_steps += 1
        return self.agent.actor(self.agent.obs_norm(observation), noise=self.held)[0]

    def _subset(self) -> torch.Tensor | None:
        subset, count = self.critics.subset, self.cfg.num_critics
        if subset is None or subset >= count:
            return None
        return torch.randperm(count, generator=self.noise_generator, device=self.device)[:subset]

    def _samples(self, batch: TensorDict, with_actor: bool):
        """The actor's samples for ``next_input`` (for the target) and, when ``with_actor``, for
        ``input`` (for the actor's loss), drawn in one pass over both: one actor forward instead
        of two on the steps that update the actor."""
        agent = self.agent
        if not with_actor:
            with torch.no_grad():
                next_action, next_log_prob = agent.actor(batch[keys.NEXT_INPUT], self.noise_generator)
            return next_action, next_log_prob, None, None
        size = batch.batch_size[0]
        action, log_prob = agent.actor(torch.cat([batch[keys.NEXT_INPUT], batch[keys.INPUT]]), self.noise_generator)
        return action[:size], log_prob[:size], action[size:], log_prob[size:]

    def terms(
        self,
        sample: TensorDict,
        timer: Timer | Untimed = UNTIMED,
        critic_step: CriticStep | None = None,
        *,
        actor: bool = True,
    ) -> dict[str, torch.Tensor]:
        """SAC's terms of a normalized ``sample``: the critics' (``critics.loss``), then, with ``actor``, the actor's
        and temperature's. ``update`` passes its ``critic_step``, taken between; ``loss`` none: one set of weights."""
        cfg = self.cfg
        alpha = self.alpha
        with timer.phase("update.forward"):
            next_action, next_log_prob, action, log_prob = self._samples(sample, actor)
            terms = self.critics.loss(
                self.agent, sample, next_action, next_log_prob, gamma=cfg.gamma, alpha=alpha, subset=self._subset()
            )
        if critic_step is not None:
            critic_step(terms)
        if actor:
            # The actor's sample was drawn before the critic step; the actor has not moved since,
            # and its loss is judged by the critics as they are now.
            with timer.phase("update.forward"):
                terms |= sac_actor_loss(
                    self.agent,
                    sample,
                    action,
                    log_prob,
                    alpha=alpha,
                    actor_q=self.critics.actor_q,
                    target_entropy=self.target_entropy,
                )
        return terms

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """:meth:`terms` of one minibatch, critics', actor's and temperature's, plus ``loss/total``, their sum."""
        return self.learner.loss(self.terms(batch))

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Store the batch, then the gradient steps it pays for; returns means over those steps."""
        stats = self.learner.learn(batch, timer, self.update)
        stats["stats/alpha"] = float(self.alpha)
        return stats

    def update(self, sample: TensorDict, timer: Timer) -> dict[str, torch.Tensor]:
        """One critic step on a normalized replay ``sample``, the actor and temperature steps when
        due, and the target update; returns the loss terms."""
        actor = (self.updates + 1) % self.cfg.policy_delay == 0
        terms = self.terms(sample, timer, self.learner.critic_step(self.critic_step, sample, timer), actor=actor)
        self.updates += 1
        if actor:
            self.actor_step(actor_objective(terms, self.cfg.autotune_alpha), timer)
        with timer.phase("update.target"):
            self.target.step()
        return terms

    def state_dict(self, *, replay: bool = True) -> dict:
        state = self.learner.state_dict(replay=replay) | {
            "target": self.target.state_dict(),
            "noise_generator": self.noise_generator.get_state(),
            "updates": self.updates,
            "held": self.held,
            "held_steps": self.held_steps,
        }
        return state if self.exploration is None else state | {"exploration": self.exploration.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.learner.load_state_dict(state)
        self.target.load_state_dict(state["target"])
        self.noise_generator.set_state(state["noise_generator"])
        self.updates = state["updates"]
        self.held, self.held_steps = state.get("held"), state.get("held_steps", 0)
        if self.exploration is not None:
            self.exploration.load_state_dict(state["exploration"])


PHASES = REPLAY_PHASES
METRICS = (
    "loss/critic",
    "loss/actor",
    "loss/alpha",
    "loss/total",
    "stats/q_mean",
    "stats/entropy",
    "stats/alpha",
    "stats/td_abs",
    *REPLAY_METRICS,
)
# loss/total, for loss() and for the means learn() reports: these terms summed in this order (total_loss).
TOTAL = ("loss/critic", "loss/actor", "loss/alpha")


def build_agent(cfg: SACConfig, ctx: BuildContext) -> SACAgent:
    """The squashed-Gaussian actor (``network.policy_sizes``), the critic ensemble (``value_sizes``
    each), its target, the temperature and the observation statistics, on the device."""
    return squashed_agent(cfg, ctx, gsde=cfg.use_sde)


def squashed_agent(
    cfg: EnsembleSettings, ctx: BuildContext, *, critic_outputs: int = 1, gsde: bool = False
) -> SACAgent:
    """:func:`build_agent` for a config of ``num_critics`` critics and a temperature starting at ``alpha``, its
    critics of ``critic_outputs`` outputs each (TQC's quantiles), its actor gSDE's with ``gsde``."""
    network = ctx.network
    encoder = ctx.encoder()
    actor: SquashedGaussianActor | SquashedStateDependentActor
    if gsde:
        net = policy_mlp(encoder.out_features, network, ctx.act_dim)
        out = net[-1]
        assert isinstance(out, nn.Linear), "policy_mlp ends in its output layer"
        noise = state_dependent_noise(network, out.in_features, ctx.act_dim)
        actor = SquashedStateDependentActor(encoder, net, ctx.box_actions, noise)
    else:
        actor = SquashedGaussianActor(
            encoder,
            policy_mlp(encoder.out_features, network, 2 * ctx.act_dim),
            ctx.box_actions,
        )
    critic = QEnsemble(
        cfg.num_critics,
        ctx.encoder(),
        ctx.act_dim,
        network.value_sizes,
        activation=network.activation,
        outputs=critic_outputs,
    )
    return SACAgent(ctx.observation_normalizer(), actor, critic, cfg.alpha).to(ctx.device)


def build(cfg: SACConfig, ctx: BuildContext) -> SAC:
    """SAC (REDQ with a critic subset) for ``ctx``'s spaces (a Box action space): the agent of
    :func:`build_agent`, its optimizers and replay.

    Raises:
        ConfigError: the buffer would not fit in free memory (or disk), or its folder is not writable.
    """
    agent = build_agent(cfg, ctx)
    critics = Critics(sac_critic_loss, subset=cfg.critic_subset, actor_q=cfg.actor_q)
    return SAC(cfg, ctx, critics, agent=agent, replay=box_replay(cfg, ctx, agent.obs_norm))


SPEC = AlgorithmSpec(
    config=SACConfig,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    metrics=METRICS,
    total=TOTAL,
)
