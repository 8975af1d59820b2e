"""Twin Delayed DDPG (Fujimoto et al., 2018): a deterministic actor, clipped double-Q critics
on a batched ensemble, target policy smoothing, and delayed actor and target updates."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import torch
from tensordict import TensorDict
from torch import nn

from rlcli import draws, keys
from rlcli.algos.context import BuildContext
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import TD3Config
from rlcli.learning.advantages import bootstrapped_target
from rlcli.learning.exploration import ActionBounds, ActionNoise
from rlcli.learning.off_policy import REPLAY_METRICS, REPLAY_PHASES, ReplayLearner, total_loss
from rlcli.learning.target_networks import TargetSchedule
from rlcli.models.actors import DeterministicActor
from rlcli.models.critics import QEnsemble, critic_regression
from rlcli.models.mlp import policy_mlp
from rlcli.models.normalization import ObservationNormalizer
from rlcli.replay import Replay, build_replay, transition_spec
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

    def __init__(self, cfg, ctx: BuildContext, *, agent: DeterministicAgent, replay: Replay, noise: ActionNoise):
        self.cfg = cfg
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
        self.noise_generator = torch.Generator(device=ctx.device)
        self.noise_generator.manual_seed(ctx.seed + 1)
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

    def _critic_terms(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        cfg = self.cfg
        return td3_critic_loss(
            self.agent,
            batch,
            gamma=cfg.gamma,
            target_noise=cfg.target_noise,
            noise_clip=cfg.target_noise_clip,
            low=self.bounds.low,
            high=self.bounds.high,
            generator=self.noise_generator,
        )

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """Critic and actor losses of one minibatch; ``loss/total`` is their sum."""
        terms = self._critic_terms(batch) | td3_actor_loss(self.agent, batch, bc_alpha=self.cfg.bc_alpha)
        terms["loss/total"] = total_loss(terms, TOTAL)
        return terms

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Store the batch, then the gradient steps it pays for; returns means over those steps."""
        return self.learner.learn(batch, timer, self.update)

    def update(self, sample: TensorDict, timer: Timer) -> dict[str, torch.Tensor]:
        """One critic step on a normalized replay ``sample``, and the actor step and target updates
        when due; returns the loss terms."""
        cfg = self.cfg
        with timer.phase("update.forward"):
            terms = self._critic_terms(sample)
        td_error = terms.pop("td_error")
        self.critic_step(terms["loss/critic"], timer)
        self.replay.prioritize(sample, td_error, timer)
        self.updates += 1
        if self.updates % cfg.policy_delay == 0:
            with timer.phase("update.forward"):
                terms |= td3_actor_loss(self.agent, sample, bc_alpha=cfg.bc_alpha)
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


def build_agent(cfg, ctx: BuildContext) -> DeterministicAgent:
    """TD3's (or DDPG's) deterministic actor (``network.policy_sizes``), ``num_critics`` critics
    (``value_sizes`` each), their targets and the observation statistics, on the device."""
    network = ctx.network
    encoder = ctx.encoder()
    actor = DeterministicActor(
        encoder,
        policy_mlp(encoder.out_features, network, ctx.act_dim),
        ctx.action_space,
    )
    critic = QEnsemble(cfg.num_critics, ctx.encoder(), ctx.act_dim, network.value_sizes, activation=network.activation)
    return DeterministicAgent(
        ctx.observation_normalizer(), actor, critic, bounds=ctx.action_bounds(), noise_scale=cfg.noise_scale
    ).to(ctx.device)


def build(cfg, ctx: BuildContext) -> TD3:
    """TD3 (or DDPG, for a config that says so) for ``ctx``'s spaces (a Box action space): the agent
    of :func:`build_agent`, its optimizers, exploration noise and replay.

    Reads ``num_critics``, ``policy_delay``, ``target_noise``, ``target_noise_clip``, ``noise``,
    ``noise_scale`` and ``ou_theta`` from ``cfg``, besides the replay settings.

    Raises:
        ConfigError: the buffer would not fit in free memory (or disk), or its folder is not writable.
    """
    agent = build_agent(cfg, ctx)
    space = ctx.action_space
    noise = ActionNoise(
        cfg.noise,
        scale=cfg.noise_scale,
        num_envs=ctx.env.num_envs,
        theta=cfg.ou_theta,
        half_range=torch.as_tensor((space.high - space.low) / 2, dtype=torch.float32),
    ).to(ctx.device)
    spec = transition_spec(ctx.observation_space, (tuple(space.shape), torch.float32), n_step=cfg.n_step)
    return TD3(cfg, ctx, agent=agent, replay=build_replay(cfg, ctx, spec, agent.obs_norm), noise=noise)


SPEC = AlgorithmSpec(
    config=TD3Config,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    metrics=METRICS,
    total=TOTAL,
)
