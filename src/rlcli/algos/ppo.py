"""Proximal Policy Optimization with the clipped surrogate (Schulman et al., 2017)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from rlcli import keys
from rlcli.algos.context import BuildContext
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import PPOConfig
from rlcli.learning.on_policy import ROLLOUT_PHASES, RolloutLearner, evaluate_minibatch

# The actor-critic alone, for evaluation: this module's build_agent.
from rlcli.learning.on_policy import build_agent as build_agent
from rlcli.learning.optim import SCHEDULES
from rlcli.models.actor_critic import ActorCritic
from rlcli.timing import Timer

if TYPE_CHECKING:
    from tensordict import TensorDict


# What ppo_loss reads.
LOSS_KEYS = (keys.INPUT, keys.ACTION, keys.LOG_PROB, keys.VALUE, keys.ADVANTAGE, keys.VALUE_TARGET)


def ppo_loss(
    agent: ActorCritic,
    batch: TensorDict,
    *,
    clip_epsilon: float,
    clip_value: float | None,
    normalize_advantage: bool,
) -> dict[str, torch.Tensor]:
    """Clipped-surrogate policy loss, value loss and entropy of one minibatch.

    Reads ``input``, ``action``, ``log_prob``, ``value``, ``advantage`` and
    ``value_target`` (each [B, ...]), and ``valid`` ([B] bool) when present: every mean
    (and the advantage normalization) is then over the valid rows only. Returns
    ``loss/policy``, ``loss/value``, ``loss/entropy`` (the mean entropy, to be
    maximised) and the detached statistics ``stats/approx_kl`` and ``stats/clip_fraction``.
    """
    out = evaluate_minibatch(agent, batch, normalize_advantage=normalize_advantage)
    log_prob, entropy, value, advantage, mean = out
    log_ratio = log_prob - batch[keys.LOG_PROB]
    ratio = log_ratio.exp()
    surrogate = torch.min(ratio * advantage, ratio.clamp(1 - clip_epsilon, 1 + clip_epsilon) * advantage)
    target = batch[keys.VALUE_TARGET]
    if clip_value is None:
        value_loss = mean((value - target).square())
    else:
        old = batch[keys.VALUE]
        clipped = old + (value - old).clamp(-clip_value, clip_value)
        value_loss = mean(torch.max((value - target).square(), (clipped - target).square()))
    with torch.no_grad():
        # Schulman's low-variance, unbiased KL estimator: (r - 1) - log r.
        approx_kl = mean((ratio - 1) - log_ratio)
        clip_fraction = mean(((ratio - 1).abs() > clip_epsilon).float())
    return {
        "loss/policy": -mean(surrogate),
        "loss/value": value_loss,
        "loss/entropy": mean(entropy),
        "stats/approx_kl": approx_kl,
        "stats/clip_fraction": clip_fraction,
    }


class PPO:
    """PPO's learning step: advantages, then ``epochs`` passes of shuffled minibatches over one rollout."""

    def __init__(self, cfg: PPOConfig, ctx: BuildContext):
        self.cfg = cfg
        self.clip_factor = SCHEDULES[cfg.clip_schedule]
        self.clip_epsilon = cfg.clip_epsilon
        self.iterations = ctx.collector.iterations
        self.iterations_done = 0
        # Minibatch order, drawn on the training device.
        self.generator = torch.Generator(device=ctx.device)
        self.generator.manual_seed(ctx.seed)
        self.device = ctx.device
        self.rollout = RolloutLearner(cfg, ctx, names=LOSS_KEYS)
        self.agent, self.step = self.rollout.agent, self.rollout.step
        self.act, self.ingest_and_sample = self.rollout.act, self.rollout.ingest_and_sample
        self.group = self.step.group

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """:func:`ppo_loss` terms of a minibatch plus ``loss/total``, the scalar to minimise."""
        cfg = self.cfg
        terms = ppo_loss(
            self.agent,
            batch,
            clip_epsilon=self.clip_epsilon,
            clip_value=cfg.clip_value,
            normalize_advantage=cfg.normalize_advantage,
        )
        terms["loss/total"] = (
            terms["loss/policy"] + cfg.value_coef * terms["loss/value"] - cfg.entropy_coef * terms["loss/entropy"]
        )
        return terms

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Advantages of the rollout, one optimisation round, then the statistics take in the rollout.

        Returns the mean of each loss term and statistic, and the learning rate used.
        """
        cfg = self.cfg
        lr = self.step.lr
        # Every row, invalid ones masked: the same number of minibatches on every rank, which step together.
        flat = self.rollout.rows(batch, timer)
        self.clip_epsilon = cfg.clip_epsilon * max(self.clip_factor(self.iterations_done / self.iterations), 1e-8)
        # Rows, or with memory whole sequences of them: what a minibatch takes at random.
        size, per = self.rollout.units(flat), self.rollout.per_minibatch(cfg.minibatch_size)
        sums: dict[str, torch.Tensor] = {}
        steps = 0
        stopped = False
        for _ in range(cfg.epochs):
            if stopped:
                break
            order = torch.randperm(size, generator=self.generator, device=self.device)
            for start in range(0, size, per):
                index = order[start : start + per]
                # A one-sample tail has no advantage spread to normalize by.
                if index.numel() * (self.rollout.sequence or 1) < 2:
                    continue
                with timer.phase("update.forward"):
                    minibatch = self.rollout.take(flat, index)
                    terms = self.loss(minibatch)
                # Decided on the ranks' mean KL, so that every rank stops at the same minibatch.
                if cfg.target_kl is not None and float(self.group.mean(terms["stats/approx_kl"])) > cfg.target_kl:
                    stopped = True
                    break
                # Across ranks each valid row weighs the same, whatever each rank's count of them.
                self.step(terms["loss/total"], timer, rows=minibatch[keys.VALID].sum())
                for name, value in terms.items():
                    sums[name] = sums.get(name, 0.0) + value.detach()
                steps += 1
        self.rollout.finish(batch)
        self.iterations_done += 1
        stats = {name: float(total) / max(steps, 1) for name, total in sums.items()}
        stats["stats/gradient_steps"] = float(steps)
        stats["stats/clip_epsilon"] = self.clip_epsilon
        stats["optim/lr"] = lr
        return stats

    def state_dict(self, *, replay: bool = True) -> dict:
        return self.rollout.state_dict() | {
            "generator": self.generator.get_state(),
            "iterations_done": self.iterations_done,
            "clip_epsilon": self.clip_epsilon,
        }

    def load_state_dict(self, state: dict) -> None:
        self.rollout.load_state_dict(state)
        self.generator.set_state(state["generator"])
        # Checkpoints written before issue 45 name iterations_done "done": old run folders still resume.
        done = state["iterations_done"] if "iterations_done" in state else state["done"]
        self.iterations_done, self.clip_epsilon = done, state["clip_epsilon"]


PHASES = ROLLOUT_PHASES
METRICS = (
    "loss/policy",
    "loss/value",
    "loss/entropy",
    "loss/total",
    "stats/approx_kl",
    "stats/clip_fraction",
    "stats/gradient_steps",
    "stats/clip_epsilon",
    "optim/lr",
)


def build(cfg: PPOConfig, ctx: BuildContext) -> PPO:
    """PPO with an actor-critic sized from ``ctx``'s spaces, its optimizer and reward scaler."""
    return PPO(cfg, ctx)


SPEC = AlgorithmSpec(
    config=PPOConfig,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    metrics=METRICS,
)
