"""CrossQ (Bhatt et al., 2024): SAC without target networks. Its critics and actor carry batch
renormalization (:mod:`rlcli.models.batch_renorm`); each critic step evaluates the replay's (s, a) and the
actor's (s', a') in one forward pass, so that the batch statistics cover both distributions, and the
TD target is the same pass's (detached) values at (s', a'). The actor and temperature step every
``policy_delay`` critic steps, as SAC's (sb3-contrib's ordering: the actor's sample is drawn after the
critic step, normalizing the actor's layers by that batch; the critics judge it with their running
statistics)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.algos.context import BuildContext
from rlcli.algos.sac import sac_actor_loss
from rlcli.algos.spec import AlgorithmSpec
from rlcli.algos.temperature import actor_objective, actor_parameters, entropy_target
from rlcli.config.algos import CrossQConfig
from rlcli.learning.advantages import bootstrapped_target
from rlcli.learning.off_policy import (
    REPLAY_METRICS,
    REPLAY_PHASES,
    UNTIMED,
    CriticStep,
    ReplayLearner,
    Untimed,
)
from rlcli.models.actors import SquashedGaussianActor
from rlcli.models.batch_renorm import Renorm, learning, renormed_mlp
from rlcli.models.critics import QEnsemble, critic_regression
from rlcli.models.normalization import ObservationNormalizer
from rlcli.replay import OffPolicyReplay, box_replay
from rlcli.timing import Timer

if TYPE_CHECKING:
    from rlcli.carry import Carry


class CrossQAgent(nn.Module):
    """The batch-renormalized actor and critic ensemble and the log-temperature over one observation
    normalizer; no target critics. Acting reads every layer's running statistics."""

    # Memoryless: its policy reads only the carry's mask (rlcli.carry).
    memory = None
    samples = True

    def __init__(self, obs_norm: ObservationNormalizer, actor: SquashedGaussianActor, critic: QEnsemble, alpha: float):
        super().__init__()
        self.obs_norm = obs_norm
        self.actor = actor
        self.critic = critic
        self.log_alpha = nn.Parameter(torch.tensor(float(np.log(alpha))))

    @torch.no_grad()
    def actions(
        self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator, carry: Carry | None = None
    ) -> torch.Tensor:
        """Evaluation actions [N, A] in the Box bounds for raw ``observation`` [N, obs]: the squashed
        mean, or a squashed sample."""
        action, _ = self.actor(self.obs_norm(observation), generator, deterministic=deterministic)
        return action


def crossq_critic_loss(
    agent: CrossQAgent,
    batch: TensorDict,
    next_action: torch.Tensor,
    next_log_prob: torch.Tensor,
    *,
    gamma: float,
    alpha: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """``0.5 * sum_e mean_b (Q_e(s, a) - y)^2`` with ``y = r + discount * (1 - terminated) * (min_e
    Q_e(s', a') - alpha * log pi(a'|s'))``, both Q's from one forward pass over the 2B rows [s, s'] x
    [a, a'] in which the critics' batch renormalization learns (the target's half detached).

    Reads ``input``, ``action``, ``reward``, ``next_input``, ``terminated`` and, when present, ``discount``
    and ``weight``; ``next_action`` [B, A] and ``next_log_prob`` [B] are the actor's sample at s'. Returns
    what :func:`rlcli.models.critics.critic_regression` returns.
    """
    size = batch.batch_size[0]
    inputs = torch.cat([batch[keys.INPUT], batch[keys.NEXT_INPUT]])
    with learning(agent.critic):
        q = agent.critic(inputs, torch.cat([batch[keys.ACTION], next_action.detach()]))
    with torch.no_grad():
        q_next = q[:, size:].min(0).values
        target = bootstrapped_target(batch, q_next - alpha * next_log_prob.detach(), gamma=gamma)
    return critic_regression(q[:, :size], target, batch)


class CrossQ:
    """Uniform actions during warm-up, then the actor's samples; each batch extends the buffer, then
    ``utd_ratio`` critic steps per frame and an actor and temperature step every ``policy_delay`` of them."""

    def __init__(self, cfg: CrossQConfig, ctx: BuildContext, *, agent: CrossQAgent, replay: OffPolicyReplay):
        self.cfg = cfg
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
        self.target_entropy = entropy_target(cfg.target_entropy, ctx.act_dim)
        self.bounds = ctx.action_bounds()
        self.noise_generator = ctx.noise_generator()
        self.updates = 0

    @property
    def alpha(self) -> torch.Tensor:
        return self.agent.log_alpha.detach().exp()

    def act(self, observation: torch.Tensor, generator: torch.Generator, carry: Carry | None = None) -> TensorDict:
        """``action`` [N, A] in the Box bounds for raw ``observation`` [N, obs]: uniform in the bounds
        during the warm-up, then sampled from the squashed Gaussian (running statistics)."""
        agent = self.agent
        return self.learner.act(
            observation, generator, self.bounds, lambda obs: agent.actor(agent.obs_norm(obs), generator)[0]
        )

    def terms(
        self,
        sample: TensorDict,
        timer: Timer | Untimed = UNTIMED,
        critic_step: CriticStep | None = None,
        *,
        actor: bool = True,
    ) -> dict[str, torch.Tensor]:
        """CrossQ's terms of a normalized ``sample``: the critics' (:func:`crossq_critic_loss`, on the actor's
        sample at s'), then, with ``actor``, the actor's and the temperature's (:func:`sac_actor_loss`, on a
        sample drawn afresh with the actor's batch statistics learning). ``update`` passes its
        ``critic_step``, taken between the two; ``loss`` passes none: all on the same weights."""
        agent, alpha = self.agent, self.alpha
        with timer.phase("update.forward"):
            with torch.no_grad():
                next_action, next_log_prob = agent.actor(sample[keys.NEXT_INPUT], self.noise_generator)
            terms = crossq_critic_loss(agent, sample, next_action, next_log_prob, gamma=self.cfg.gamma, alpha=alpha)
        if critic_step is not None:
            critic_step(terms)
        if actor:
            with timer.phase("update.forward"):
                with learning(agent.actor):
                    action, log_prob = agent.actor(sample[keys.INPUT], self.noise_generator)
                terms |= sac_actor_loss(
                    agent, sample, action, log_prob, alpha=alpha, actor_q="min", target_entropy=self.target_entropy
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
        """One critic step on a normalized replay ``sample`` and, when due, the actor and temperature
        step; returns the loss terms."""
        actor = (self.updates + 1) % self.cfg.policy_delay == 0
        terms = self.terms(sample, timer, self.learner.critic_step(self.critic_step, sample, timer), actor=actor)
        self.updates += 1
        if actor:
            self.actor_step(actor_objective(terms, self.cfg.autotune_alpha), timer)
        return terms

    def state_dict(self, *, replay: bool = True) -> dict:
        return self.learner.state_dict(replay=replay) | {
            "noise_generator": self.noise_generator.get_state(),
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict) -> None:
        self.learner.load_state_dict(state)
        self.noise_generator.set_state(state["noise_generator"])
        self.updates = state["updates"]


# No target update: the replay's phases without update.target.
PHASES = tuple(phase for phase in REPLAY_PHASES if phase != "update.target")
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


def build_agent(cfg: CrossQConfig, ctx: BuildContext) -> CrossQAgent:
    """The batch-renormalized squashed-Gaussian actor (``network.policy_sizes``), the critic ensemble
    (``value_sizes`` each), the temperature and the observation statistics, on the device."""
    network = ctx.network
    renorm = Renorm(momentum=cfg.batch_norm_momentum, eps=cfg.batch_norm_eps, warmup=cfg.renorm_warmup_steps)
    encoder = ctx.encoder()
    net = renormed_mlp(
        encoder.out_features, network.policy_sizes, 2 * ctx.act_dim, activation=network.activation, renorm=renorm
    )
    actor = SquashedGaussianActor(encoder, net, ctx.box_actions)
    critic = QEnsemble(
        cfg.num_critics, ctx.encoder(), ctx.act_dim, network.value_sizes, activation=network.activation, renorm=renorm
    )
    return CrossQAgent(ctx.observation_normalizer(), actor, critic, cfg.alpha).to(ctx.device)


def build(cfg: CrossQConfig, ctx: BuildContext) -> CrossQ:
    """CrossQ for ``ctx``'s spaces (a Box action space): the agent, its optimizers and replay.

    Raises:
        ConfigError: the buffer would not fit in free memory (or disk), or its folder is not writable.
    """
    agent = build_agent(cfg, ctx)
    return CrossQ(cfg, ctx, agent=agent, replay=box_replay(cfg, ctx, agent.obs_norm))


SPEC = AlgorithmSpec(
    config=CrossQConfig,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    metrics=METRICS,
    total=TOTAL,
)
