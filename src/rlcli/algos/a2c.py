"""Advantage Actor-Critic, the synchronous variant of A3C (Mnih et al., 2016)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import torch

from rlcli import keys
from rlcli.algos.context import BuildContext
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import A2CConfig
from rlcli.learning.on_policy import ROLLOUT_PHASES, SingleStepLearner, evaluate_minibatch

# The actor-critic alone, for evaluation: this module's build_agent.
from rlcli.learning.on_policy import build_agent as build_agent

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


def a2c_objective(agent: ActorCritic, batch: TensorDict, *, cfg: A2CConfig) -> dict[str, torch.Tensor]:
    """:func:`a2c_loss` terms of a batch plus ``loss/total``, the scalar to minimise."""
    terms = a2c_loss(agent, batch, normalize_advantage=cfg.normalize_advantage)
    terms["loss/total"] = (
        terms["loss/policy"] + cfg.value_coef * terms["loss/value"] - cfg.entropy_coef * terms["loss/entropy"]
    )
    return terms


PHASES = ROLLOUT_PHASES
METRICS = ("loss/policy", "loss/value", "loss/entropy", "loss/total", "optim/lr")


def build(cfg: A2CConfig, ctx: BuildContext) -> SingleStepLearner:
    """A2C: advantages, then one gradient step per rollout, with an actor-critic sized from ``ctx``'s
    spaces, its optimizer and reward scaler (A2C draws no random numbers of its own: ``ctx.seed`` is
    unused)."""
    return SingleStepLearner(cfg, ctx, objective=partial(a2c_objective, cfg=cfg), names=LOSS_KEYS)


SPEC = AlgorithmSpec(
    config=A2CConfig,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    metrics=METRICS,
)
