"""Advantage Actor-Critic, the synchronous variant of A3C (Mnih et al., 2016)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from gymnasium import spaces as gspaces

from rlcli import keys
from rlcli.build_context import BuildContext
from rlcli.config.algos import A2CConfig
from rlcli.rollout import RolloutLearner, evaluate_minibatch

# The actor-critic alone, for evaluation: this module's build_agent.
from rlcli.rollout import build_agent as build_agent
from rlcli.timing import Timer

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.models.actor_critic import ActorCritic


# What a2c_loss reads.
LOSS_KEYS = (keys.INPUT, keys.ACTION, keys.ADVANTAGE, keys.VALUE_TARGET)


def a2c_loss(agent: ActorCritic, batch: TensorDict, *, normalize_advantage: bool) -> dict[str, torch.Tensor]:
    """Policy-gradient loss, value loss and entropy of a batch.

    Reads ``input``, ``action``, ``advantage`` and ``value_target`` (each [B, ...]), and ``valid``
    ([B] bool) when present: every mean (and the advantage normalization) is then over the valid
    rows only, and a batch without any is a loss of 0. Returns ``loss/policy``, ``loss/value``
    and ``loss/entropy`` (the mean entropy).
    """
    out = evaluate_minibatch(agent, batch, normalize_advantage=normalize_advantage)
    mean = out.mean
    return {
        "loss/policy": -mean(out.log_prob * out.advantage),
        "loss/value": mean((out.value - batch[keys.VALUE_TARGET]).square()),
        "loss/entropy": mean(out.entropy),
    }


class A2C:
    """A2C's learning step: advantages, then one gradient step per rollout."""

    def __init__(self, cfg: A2CConfig, ctx: BuildContext):
        self.cfg = cfg
        self.rollout = RolloutLearner(cfg, ctx, names=LOSS_KEYS)
        self.agent, self.step = self.rollout.agent, self.rollout.step
        self.act, self.ingest_and_sample = self.agent.act, self.rollout.ingest_and_sample

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """:func:`a2c_loss` terms of a batch plus ``loss/total``, the scalar to minimise."""
        cfg = self.cfg
        terms = a2c_loss(self.agent, batch, normalize_advantage=cfg.normalize_advantage)
        terms["loss/total"] = (
            terms["loss/policy"] + cfg.value_coef * terms["loss/value"] - cfg.entropy_coef * terms["loss/entropy"]
        )
        return terms

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Advantages, one gradient step on the valid samples of ``batch``, then the statistics update."""
        lr = self.step.lr
        flat = self.rollout.rows(batch, timer)
        with timer.phase("update.forward"):
            terms = self.loss(flat)
        # Across ranks each valid row weighs the same, whatever each rank's count of them.
        self.step(terms["loss/total"], timer, rows=flat[keys.VALID].sum())
        self.rollout.finish(batch)
        return {name: float(value.detach()) for name, value in terms.items()} | {"optim/lr": lr}

    def state_dict(self, *, replay: bool = True) -> dict:
        return self.rollout.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.rollout.load_state_dict(state)


CONFIG = A2CConfig
SUPPORTS = {"observation": (gspaces.Box, gspaces.Discrete, gspaces.Dict), "action": (gspaces.Discrete, gspaces.Box)}
PHASES = ("update.advantage", "update.forward", "update.backward", "update.optimizer")
METRICS = ("loss/policy", "loss/value", "loss/entropy", "loss/total", "optim/lr")


def build(cfg: A2CConfig, ctx: BuildContext) -> A2C:
    """A2C with an actor-critic sized from ``ctx``'s spaces, its optimizer and reward scaler (A2C
    draws no random numbers of its own: ``ctx.seed`` is unused)."""
    return A2C(cfg, ctx)
