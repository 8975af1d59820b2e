"""Conservative Q-Learning, the CQL(H) variant on SAC (Kumar et al., 2020): offline.

Each critic's soft Bellman loss gets a conservative term: the temperature-scaled logsumexp of Q over
actions sampled uniformly and from the current policy at ``s`` and at ``s'`` (each importance-corrected
by its density), minus Q at the dataset's action. Its weight is fixed (``conservative_weight``) or, with
``lagrange``, tuned so that the gap stays at ``target_action_gap``. Every critic of the batched
ensemble is evaluated on all ``3 * num_random_actions`` actions of a batch in one forward pass.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.algos.context import BuildContext
from rlcli.algos.sac import SACAgent, sac_actor_loss, squashed_agent
from rlcli.algos.spec import AlgorithmSpec
from rlcli.algos.temperature import actor_objective, actor_parameters, entropy_target
from rlcli.config.algos import CQLConfig
from rlcli.learning.advantages import bootstrapped_target
from rlcli.learning.off_policy import (
    REPLAY_METRICS,
    UNPRIORITIZED_PHASES,
    UNTIMED,
    CriticStep,
    ReplayLearner,
    Untimed,
)
from rlcli.learning.target_networks import TargetSchedule
from rlcli.models.critics import critic_regression
from rlcli.replay import offline_replay
from rlcli.timing import Timer

if TYPE_CHECKING:
    from rlcli.carry import Carry


class CQLAgent(nn.Module):
    """SAC's networks (actor, critic ensemble, its target, log-temperature, observation statistics) and
    ``log_weight``, the log of the Lagrange multiplier (tuned with ``lagrange`` only) that scales
    ``conservative_weight``: it starts at 0, so that the effective weight starts at ``conservative_weight``
    itself, as in Kumar et al.'s code (``log_alpha_prime`` from 0) and TorchRL's ``CQLLoss``."""

    # Memoryless: its policy reads only the carry's mask (rlcli.carry).
    memory = None
    samples = True

    def __init__(self, sac: SACAgent):
        super().__init__()
        self.obs_norm, self.actor, self.critic = sac.obs_norm, sac.actor, sac.critic
        self.critic_target, self.log_alpha = sac.critic_target, sac.log_alpha
        self.log_weight = nn.Parameter(torch.tensor(0.0))

    @torch.no_grad()
    def actions(
        self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator, carry: Carry | None = None
    ) -> torch.Tensor:
        """Evaluation actions [N, A] in the bounds: the squashed mean, or a squashed sample."""
        action, _ = self.actor(self.obs_norm(observation), generator, deterministic=deterministic)
        return action


def repeated(tensor: torch.Tensor, times: int) -> torch.Tensor:
    """``tensor`` [B, ...] with each row repeated ``times`` times in a row: [B * times, ...]."""
    return tensor.repeat_interleave(times, dim=0)


def conservative_gap(
    agent: CQLAgent,
    batch: TensorDict,
    q_data: torch.Tensor,
    *,
    samples: int,
    temperature: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """CQL(H)'s gap per critic ([E]): ``mean_b temperature * logsumexp_j (Q(s, a_j) / temperature - log
    density(a_j)) - mean_b Q(s, a)``, over ``samples`` uniform actions and ``samples`` policy actions at
    ``s`` and at ``s'`` each (Kumar et al., 2020, appendix F, the importance-sampled estimate).

    Reads ``input`` and ``next_input``; ``q_data`` [E, B] is Q at the dataset's actions. The policy's
    samples carry no gradient into the actor.
    """
    inputs, next_inputs = batch[keys.INPUT], batch[keys.NEXT_INPUT]
    size = inputs.shape[0]
    rescale = agent.actor.rescale
    act_dim = rescale.half_range.numel()
    with torch.no_grad():
        both = repeated(torch.cat([inputs, next_inputs]), samples)
        policy_action, policy_log_prob = agent.actor(both, generator)
        unit = torch.rand(size * samples, act_dim, generator=generator, device=inputs.device) * 2 - 1
    # The uniform density over (-1, 1)^A, where the squashed Gaussian's log-probabilities live too.
    uniform_log_prob = torch.full((size * samples,), -act_dim * math.log(2.0), device=inputs.device)
    states = repeated(inputs, samples)
    actions = torch.cat([rescale(unit), policy_action])
    log_density = torch.cat([uniform_log_prob, policy_log_prob])
    q = agent.critic(torch.cat([states, states, states]), actions)  # [E, 3 * B * samples]
    # [E, 3, B, samples] -> [E, B, 3 * samples]: each state's sampled actions side by side.
    q = q.view(q.shape[0], 3, size, samples).permute(0, 2, 1, 3).reshape(q.shape[0], size, 3 * samples)
    density = log_density.view(3, size, samples).permute(1, 0, 2).reshape(size, 3 * samples)
    soft_max = temperature * torch.logsumexp(q / temperature - density, dim=-1)
    return soft_max.mean(-1) - q_data.mean(-1)


def cql_critic_loss(
    agent: CQLAgent, batch: TensorDict, *, gamma: float, alpha: torch.Tensor, cfg: CQLConfig, generator: torch.Generator
) -> dict[str, torch.Tensor]:
    """The Bellman loss of every critic plus the conservative term, and with ``lagrange`` the
    multiplier's loss. Reads what :func:`rlcli.algos.sac.sac_critic_loss` reads. Returns ``loss/critic``
    (both terms), ``loss/conservative``, ``stats/gap``, ``stats/q_mean``, ``stats/td_abs`` and, with
    ``lagrange``, ``loss/weight``.

    With ``lagrange`` the conservative term is ``sum_e m * w * (gap_e - target_action_gap)`` for the
    multiplier ``m = exp(log_weight)`` (starting at 1) and ``w = conservative_weight``, and the
    multiplier's loss ``-mean_e m * w * (gap_e - target_action_gap)``: its gradient step raises ``m``
    while the critics' mean gap is above the target and lowers it below. The mean over critics is
    Kumar et al.'s ``0.5 * (-l1 - l2)`` for their two critics, for any ensemble size."""
    with torch.no_grad():
        next_action, next_log_prob = agent.actor(batch[keys.NEXT_INPUT], generator)
        q_next = agent.critic_target(batch[keys.NEXT_INPUT], next_action).min(0).values
        if cfg.backup_entropy:
            q_next = q_next - alpha * next_log_prob
        target = bootstrapped_target(batch, q_next, gamma=gamma)
    q_data = agent.critic(batch[keys.INPUT], batch[keys.ACTION])
    terms = critic_regression(q_data, target, batch)
    terms.pop("td_error")
    # The Bellman term at full weight, sum_e mean (Q_e - y)^2, as CQL's reference code, CORL and d3rlpy
    # weigh it against the conservative term (critic_regression halves it, as SAC's code does).
    terms["loss/critic"] = 2 * terms["loss/critic"]
    gap = conservative_gap(
        agent, batch, q_data, samples=cfg.num_random_actions, temperature=cfg.temperature, generator=generator
    )
    if cfg.lagrange:
        weight = agent.log_weight.exp().clamp(0.0, 1e6) * cfg.conservative_weight
        conservative = (weight.detach() * (gap - cfg.target_action_gap)).sum()
        terms["loss/weight"] = -(weight * (gap.detach() - cfg.target_action_gap)).mean()
    else:
        conservative = cfg.conservative_weight * gap.sum()
    terms["loss/critic"] = terms["loss/critic"] + conservative
    terms["loss/conservative"] = conservative.detach()
    terms["stats/gap"] = gap.detach().mean()
    return terms


class CQL:
    """Each gradient step: the critic step (Bellman and conservative terms), the conservative weight's
    step with ``lagrange``, the actor and temperature step, and a Polyak update of the target critics."""

    def __init__(self, cfg: CQLConfig, ctx: BuildContext, *, agent: CQLAgent):
        self.cfg = cfg
        self.agent = agent
        self.replay = offline_replay(ctx, agent.obs_norm, gamma=cfg.gamma)
        self.critic_step = ctx.gradient_step(agent.critic.parameters())
        self.actor_step = ctx.gradient_step(actor_parameters(agent, cfg.autotune_alpha), lr=cfg.actor_lr)
        steps = {"critic_step": self.critic_step, "actor_step": self.actor_step}
        if cfg.lagrange:
            self.weight_step = ctx.gradient_step([agent.log_weight])
            steps["weight_step"] = self.weight_step
        self.learner = ReplayLearner(self.replay, steps, batch_size=cfg.batch_size, seed=ctx.seed, total=TOTAL)
        self.ingest_and_sample = self.learner.ingest_and_sample
        self.target = TargetSchedule(agent.critic_target, agent.critic, tau=cfg.tau, interval=1)
        self.target_entropy = entropy_target(None, ctx.act_dim)
        self.noise_generator = ctx.noise_generator()

    @property
    def alpha(self) -> torch.Tensor:
        return self.agent.log_alpha.detach().exp()

    def terms(
        self, sample: TensorDict, timer: Timer | Untimed = UNTIMED, critic_step: CriticStep | None = None
    ) -> dict[str, torch.Tensor]:
        """CQL's terms of a normalized ``sample``: the critics' (:func:`cql_critic_loss`, with the multiplier's
        under ``lagrange``), then the actor's and the temperature's (:func:`sac_actor_loss`). ``update`` passes
        its ``critic_step``, taken between the two; ``loss`` passes none: all on the same weights."""
        cfg = self.cfg
        with timer.phase("update.forward"):
            terms = cql_critic_loss(
                self.agent, sample, gamma=cfg.gamma, alpha=self.alpha, cfg=cfg, generator=self.noise_generator
            )
        if critic_step is not None:
            critic_step(terms)
        with timer.phase("update.forward"):
            action, log_prob = self.agent.actor(sample[keys.INPUT], self.noise_generator)
            terms |= sac_actor_loss(
                self.agent,
                sample,
                action,
                log_prob,
                alpha=self.alpha,
                actor_q="min",
                target_entropy=self.target_entropy,
            )
        return terms

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """:meth:`terms` of one minibatch, critics', actor's and temperature's, plus ``loss/total``, their sum."""
        return self.learner.loss(self.terms(batch))

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """The iteration's gradient steps; returns each term's mean over them."""
        stats = self.learner.learn(batch, timer, self.update)
        stats["stats/alpha"] = float(self.alpha)
        stats["stats/conservative_weight"] = (
            float(self.agent.log_weight.detach().exp()) * self.cfg.conservative_weight
            if self.cfg.lagrange
            else self.cfg.conservative_weight
        )
        return stats

    def update(self, sample: TensorDict, timer: Timer) -> dict[str, torch.Tensor]:
        """The critic step (and the multiplier's, with ``lagrange``), the actor and temperature step on a
        normalized ``sample``, then the target update; returns the loss terms."""
        cfg = self.cfg

        def critic_step(terms: dict[str, torch.Tensor]) -> None:
            self.critic_step(terms["loss/critic"], timer)
            if cfg.lagrange:
                self.weight_step(terms["loss/weight"], timer)

        terms = self.terms(sample, timer, critic_step)
        self.actor_step(actor_objective(terms, cfg.autotune_alpha), timer)
        with timer.phase("update.target"):
            self.target.step()
        return terms

    def state_dict(self, *, replay: bool = True) -> dict:
        return self.learner.state_dict(replay=replay) | {
            "target": self.target.state_dict(),
            "noise_generator": self.noise_generator.get_state(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.learner.load_state_dict(state)
        self.target.load_state_dict(state["target"])
        self.noise_generator.set_state(state["noise_generator"])


PHASES = UNPRIORITIZED_PHASES
METRICS = (
    "loss/critic",
    "loss/conservative",
    "loss/weight",
    "loss/actor",
    "loss/alpha",
    "loss/total",
    "stats/q_mean",
    "stats/gap",
    "stats/entropy",
    "stats/alpha",
    "stats/conservative_weight",
    "stats/td_abs",
    *REPLAY_METRICS,
)
# loss/total, for loss() and for the means learn() reports: these terms summed in this order (total_loss).
TOTAL = ("loss/critic", "loss/actor", "loss/alpha")


def build_agent(cfg: CQLConfig, ctx: BuildContext) -> CQLAgent:
    """SAC's agent (:func:`rlcli.algos.sac.squashed_agent`, without gSDE) and the conservative weight, on the device."""
    return CQLAgent(squashed_agent(cfg, ctx)).to(ctx.device)


def build(cfg: CQLConfig, ctx: BuildContext) -> CQL:
    """CQL for ``ctx``'s spaces (a Box action space) and dataset: the agent, its optimizers and the dataset."""
    return CQL(cfg, ctx, agent=build_agent(cfg, ctx))


SPEC = AlgorithmSpec(
    config=CQLConfig,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    metrics=METRICS,
    total=TOTAL,
)
