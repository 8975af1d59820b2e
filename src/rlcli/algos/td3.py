"""Twin Delayed DDPG (Fujimoto et al., 2018): a deterministic actor, clipped double-Q critics
on a batched ensemble, target policy smoothing, and delayed actor and target updates."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from tensordict import TensorDict
from torch import nn

from rlcli import draws, keys
from rlcli.algos.context import BuildContext
from rlcli.algos.settings import DeterministicSettings
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import TD3Config
from rlcli.learning.advantages import bootstrapped_target
from rlcli.learning.exploration import ActionBounds, ActionNoise
from rlcli.learning.off_policy import (
    REPLAY_METRICS,
    REPLAY_PHASES,
    UNTIMED,
    CriticStep,
    ReplayLearner,
    Untimed,
)
from rlcli.learning.target_networks import TargetSchedule
from rlcli.models.actors import DeterministicActor
from rlcli.models.critics import QEnsemble, critic_regression
from rlcli.models.mlp import policy_mlp
from rlcli.models.normalization import ObservationNormalizer
from rlcli.replay import OffPolicyReplay, box_replay
from rlcli.timing import Timer

if TYPE_CHECKING:
    from rlcli.carry import Carry


class DeterministicAgent(nn.Module):
    """Actor, critics and their targets over one observation normalizer.

    ``bounds`` (on the device) and ``noise_scale`` (the Gaussian noise of stochastic evaluation,
    in half-ranges) are plain attributes, not part of the state_dict.
    """

    # Memoryless: its policy reads only the carry's mask (rlcli.carry).
    memory = None

    def __init__(
        self,
        obs_norm: ObservationNormalizer,
        actor: DeterministicActor,
        critic: QEnsemble,
        *,
        bounds: ActionBounds,
        noise_scale: float,
    ):
        super().__init__()
        self.obs_norm = obs_norm
        self.actor = actor
        self.critic = critic
        self.actor_target = copy.deepcopy(actor).requires_grad_(False)
        self.critic_target = copy.deepcopy(critic).requires_grad_(False)
        self.bounds, self.noise_scale = bounds, noise_scale
        self.samples = noise_scale > 0

    @torch.no_grad()
    def actions(
        self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator, carry: Carry | None = None
    ) -> torch.Tensor:
        """Evaluation actions [N, A] in the Box bounds for raw ``observation`` [N, obs]: the actor's, plus
        Gaussian noise of ``noise_scale`` when stochastic.

        Gaussian even for OU-noise configs: the OU state belongs to the collection envs, and
        evaluation must neither read nor advance it.
        """
        action = self.actor(self.obs_norm(observation))
        if deterministic:
            return action
        low, high = self.bounds.low, self.bounds.high
        draw = draws.normal(action, generator)
        return self.bounds.clip(action + self.noise_scale * draw * (high - low) / 2)


@dataclass(frozen=True)
class Twin:
    """TD3's critic ensemble, its delay, its target smoothing and TD3+BC's weight: a TD3 config's own fields
    (:func:`twin`), DDPG's fixed values (:data:`rlcli.algos.ddpg.SINGLE`)."""

    num_critics: int
    """Critics whose minimum is the target."""
    policy_delay: int
    """Critic steps per actor step and target update."""
    target_noise: float
    """Std of the target policy's smoothing noise, in half-ranges."""
    target_noise_clip: float
    """Clip of that noise, in half-ranges."""
    bc_alpha: float | None = None
    """TD3+BC's weight of the critic against the distance to the batch's actions; None: no BC term."""


def twin(cfg: TD3Config) -> Twin:
    """The :class:`Twin` of a TD3 config, from its own fields."""
    return Twin(
        num_critics=cfg.num_critics,
        policy_delay=cfg.policy_delay,
        target_noise=cfg.target_noise,
        target_noise_clip=cfg.target_noise_clip,
        bc_alpha=cfg.bc_alpha,
    )


def deterministic_agent(cfg: DeterministicSettings, ctx: BuildContext, *, num_critics: int) -> DeterministicAgent:
    """A deterministic actor (``network.policy_sizes``), ``num_critics`` critics (``value_sizes`` each), their
    targets and the observation statistics, on the device: TD3's and DDPG's agent."""
    network = ctx.network
    encoder = ctx.encoder()
    actor = DeterministicActor(
        encoder,
        policy_mlp(encoder.out_features, network, ctx.act_dim),
        ctx.box_actions,
    )
    critic = QEnsemble(num_critics, ctx.encoder(), ctx.act_dim, network.value_sizes, activation=network.activation)
    return DeterministicAgent(
        ctx.observation_normalizer(), actor, critic, bounds=ctx.action_bounds(), noise_scale=cfg.noise_scale
    ).to(ctx.device)


def deterministic_learner(cfg: DeterministicSettings, ctx: BuildContext, settings: Twin) -> TD3:
    """TD3's machinery with ``settings`` for ``ctx``'s spaces (a Box action space): the agent of
    :func:`deterministic_agent`, its optimizers, exploration noise (``noise``, ``noise_scale``, ``ou_theta``)
    and replay.

    Raises:
        ConfigError: the buffer would not fit in free memory (or disk), or its folder is not writable.
    """
    agent = deterministic_agent(cfg, ctx, num_critics=settings.num_critics)
    space = ctx.box_actions
    noise = ActionNoise(
        cfg.noise,
        scale=cfg.noise_scale,
        num_envs=ctx.env.num_envs,
        theta=cfg.ou_theta,
        half_range=torch.as_tensor((space.high - space.low) / 2, dtype=torch.float32),
    ).to(ctx.device)
    return TD3(cfg, ctx, settings, agent=agent, replay=box_replay(cfg, ctx, agent.obs_norm), noise=noise)


def td3_critic_loss(
    agent: DeterministicAgent,
    batch: TensorDict,
    *,
    gamma: float,
    target_noise: float,
    noise_clip: float,
    low: torch.Tensor,
    high: torch.Tensor,
    generator: torch.Generator,
) -> dict[str, torch.Tensor]:
    """``0.5 * sum_e mean_b (Q_e(s, a) - y)^2`` with ``y = r + discount * (1 - terminated) *
    min_e Q'_e(s', clip(pi'(s') + clip(eps, -c, c)))``, eps ~ N(0, target_noise) in half-ranges.

    Reads ``input``, ``action``, ``reward``, ``next_input``, ``terminated`` and, when present,
    ``discount`` and ``weight``. Returns ``loss/critic``, ``stats/q_mean``, ``stats/td_abs`` and
    ``td_error`` ([B], detached, the mean over critics, for priorities).
    """
    with torch.no_grad():
        next_action = agent.actor_target(batch[keys.NEXT_INPUT])
        if target_noise > 0:
            noise = torch.randn(next_action.shape, generator=generator, device=next_action.device)
            noise = (noise * target_noise).clamp_(-noise_clip, noise_clip)
            next_action = torch.minimum(torch.maximum(next_action + noise * (high - low) / 2, low), high)
        q_next = agent.critic_target(batch[keys.NEXT_INPUT], next_action).min(0).values
        target = bootstrapped_target(batch, q_next, gamma=gamma)
    return critic_regression(agent.critic(batch[keys.INPUT], batch[keys.ACTION]), target, batch)


def td3_actor_loss(
    agent: DeterministicAgent, batch: TensorDict, *, bc_alpha: float | None = None
) -> dict[str, torch.Tensor]:
    """``-mean Q_0(s, pi(s))``: the first critic judges the actor. Reads ``input``; the
    critics' weights get no gradient.

    With ``bc_alpha`` (TD3+BC, Fujimoto & Gu 2021): ``-lambda * mean Q_0(s, pi(s)) + mean (pi(s) - a)^2``
    with ``lambda = bc_alpha / mean |Q_0|`` (detached), which also reads ``action``; adds ``loss/bc``.
    """
    action = agent.actor(batch[keys.INPUT])
    with agent.critic.frozen():
        q = agent.critic(batch[keys.INPUT], action)[0]
    if bc_alpha is None:
        return {"loss/actor": -q.mean()}
    scale = bc_alpha / q.detach().abs().mean().clamp(min=1e-6)
    bc = (action - batch[keys.ACTION]).square().mean()
    return {"loss/actor": -scale * q.mean() + bc, "loss/bc": bc.detach()}


class TD3:
    """Uniform actions during warm-up, then the actor plus exploration noise; each batch extends
    the buffer, then ``utd_ratio`` critic steps per frame, and every ``policy_delay`` of them an
    actor step and Polyak updates of both targets. DDPG is this with one critic, no delay and
    no target smoothing."""

    def __init__(
        self,
        cfg: DeterministicSettings,
        ctx: BuildContext,
        settings: Twin,
        *,
        agent: DeterministicAgent,
        replay: OffPolicyReplay,
        noise: ActionNoise,
    ):
        self.cfg = cfg
        self.settings = settings
        self.agent = agent
        self.replay = replay
        self.noise = noise
        self.critic_step = ctx.gradient_step(agent.critic.parameters())
        self.actor_step = ctx.gradient_step(agent.actor.parameters())
        self.learner = ReplayLearner(
            replay,
            {"critic_step": self.critic_step, "actor_step": self.actor_step},
            batch_size=cfg.batch_size,
            seed=ctx.seed,
            total=TOTAL,
        )
        self.ingest_and_sample = self.learner.ingest_and_sample
        # Both targets move together, right after each (delayed) actor step.
        self.critic_target = TargetSchedule(agent.critic_target, agent.critic, tau=cfg.tau, interval=1)
        self.actor_target = TargetSchedule(agent.actor_target, agent.actor, tau=cfg.tau, interval=1)
        self.bounds = agent.bounds
        self.noise_generator = ctx.noise_generator()
        self.updates = 0

    def act(self, observation: torch.Tensor, generator: torch.Generator, carry: Carry | None = None) -> TensorDict:
        """``action`` [N, A] in the Box bounds: uniform during the warm-up, then the actor's plus noise,
        clipped (stored as executed: the critic learns the value of the clipped action)."""
        return self.learner.act(
            observation,
            generator,
            self.bounds,
            lambda obs: self.bounds.clip(self.noise(self.agent.actor(self.agent.obs_norm(obs)), generator)),
        )

    def terms(
        self,
        sample: TensorDict,
        timer: Timer | Untimed = UNTIMED,
        critic_step: CriticStep | None = None,
        *,
        actor: bool = True,
    ) -> dict[str, torch.Tensor]:
        """TD3's terms of a normalized ``sample``: the critics' (:func:`td3_critic_loss`), then, with ``actor``,
        the actor's (:func:`td3_actor_loss`). ``update`` passes its ``critic_step``, taken between the two, so
        that the actor's terms are formed on the stepped critics; ``loss`` passes none: both on the same
        weights."""
        cfg = self.cfg
        with timer.phase("update.forward"):
            terms = td3_critic_loss(
                self.agent,
                sample,
                gamma=cfg.gamma,
                target_noise=self.settings.target_noise,
                noise_clip=self.settings.target_noise_clip,
                low=self.bounds.low,
                high=self.bounds.high,
                generator=self.noise_generator,
            )
        if critic_step is not None:
            critic_step(terms)
        if actor:
            with timer.phase("update.forward"):
                terms |= td3_actor_loss(self.agent, sample, bc_alpha=self.settings.bc_alpha)
        return terms

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """:meth:`terms` of one minibatch, critics' and actor's, plus ``loss/total``, their sum."""
        return self.learner.loss(self.terms(batch))

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Store the batch, then the gradient steps it pays for; returns means over those steps."""
        return self.learner.learn(batch, timer, self.update)

    def update(self, sample: TensorDict, timer: Timer) -> dict[str, torch.Tensor]:
        """One critic step on a normalized replay ``sample``, and the actor step and target updates
        when due; returns the loss terms."""
        actor = (self.updates + 1) % self.settings.policy_delay == 0
        terms = self.terms(sample, timer, self.learner.critic_step(self.critic_step, sample, timer), actor=actor)
        self.updates += 1
        if actor:
            self.actor_step(terms["loss/actor"], timer)
            with timer.phase("update.target"):
                self.critic_target.step()
                self.actor_target.step()
        return terms

    def state_dict(self, *, replay: bool = True) -> dict:
        return self.learner.state_dict(replay=replay) | {
            "noise_generator": self.noise_generator.get_state(),
            "updates": self.updates,
            "noise": self.noise.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.learner.load_state_dict(state)
        self.noise_generator.set_state(state["noise_generator"])
        self.updates = state["updates"]
        self.noise.load_state_dict(state["noise"])


PHASES = REPLAY_PHASES
METRICS = (
    "loss/critic",
    "loss/actor",
    "loss/bc",
    "loss/total",
    "stats/q_mean",
    "stats/td_abs",
    *REPLAY_METRICS,
)
# loss/total, for loss() and for the means learn() reports: these terms summed in this order (total_loss).
TOTAL = ("loss/critic", "loss/actor")


def build_agent(cfg: TD3Config, ctx: BuildContext) -> DeterministicAgent:
    """TD3's deterministic actor (``network.policy_sizes``), ``num_critics`` critics (``value_sizes`` each),
    their targets and the observation statistics, on the device."""
    return deterministic_agent(cfg, ctx, num_critics=cfg.num_critics)


def build(cfg: TD3Config, ctx: BuildContext) -> TD3:
    """TD3 (TD3+BC with ``bc_alpha``) for ``ctx``'s spaces (a Box action space): the agent of
    :func:`build_agent`, its optimizers, exploration noise and replay.

    Raises:
        ConfigError: the buffer would not fit in free memory (or disk), or its folder is not writable.
    """
    return deterministic_learner(cfg, ctx, twin(cfg))


SPEC = AlgorithmSpec(
    config=TD3Config,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    metrics=METRICS,
    total=TOTAL,
)
