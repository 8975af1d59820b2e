"""REINFORCE, the Monte-Carlo policy gradient (Williams, 1992), with or without a learned baseline.

Each batch's returns are Monte Carlo (``value_target = "td1"``) over the steps it holds. An episode
the batch cuts has no return past the batch end: with a baseline the critic stands in for it (the
return bootstraps from ``next_value``, as at a truncation); without one its steps are left out of
the loss (``valid`` masks them), and their episode counts from the next batch on. Without a
baseline a truncation ends the return with nothing added (the return of the episode as played),
and the value head is still built (evaluation and checkpoints see one network shape) but takes
no loss and no gradient. One gradient step per batch.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import torch

from rlcli import keys
from rlcli.algos.context import BuildContext
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import REINFORCEConfig
from rlcli.learning.on_policy import ROLLOUT_PHASES, SingleStepLearner, evaluate_minibatch

# The actor-critic alone, for evaluation: this module's build_agent.
from rlcli.learning.on_policy import build_agent as build_agent

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.models.actor_critic import ActorCritic


# What reinforce_loss reads.
LOSS_KEYS = (keys.INPUT, keys.ACTION, keys.ADVANTAGE, keys.VALUE_TARGET)


def reinforce_loss(
    agent: ActorCritic, batch: TensorDict, *, baseline: bool, normalize_advantage: bool
) -> dict[str, torch.Tensor]:
    """The score-function policy loss, the baseline's value loss and the entropy of a batch.

    Reads ``input``, ``action`` and ``advantage`` (the return, less the baseline's value when there
    is one), ``value_target`` with a baseline (each [B, ...]), and ``valid`` ([B] bool) when present:
    every mean (and the advantage normalization) is then over the valid rows only. Returns
    ``loss/policy``, ``loss/entropy`` (the mean entropy) and, with a baseline only, ``loss/value``.
    """
    out = evaluate_minibatch(agent, batch, normalize_advantage=normalize_advantage)
    terms = {"loss/policy": -out.mean(out.log_prob * out.advantage), "loss/entropy": out.mean(out.entropy)}
    if baseline:
        terms["loss/value"] = out.mean((out.value - batch[keys.VALUE_TARGET]).square())
    return terms


def reinforce_objective(agent: ActorCritic, batch: TensorDict, *, cfg: REINFORCEConfig) -> dict[str, torch.Tensor]:
    """:func:`reinforce_loss` terms of a batch plus ``loss/total``, the scalar to minimise."""
    terms = reinforce_loss(agent, batch, baseline=cfg.baseline, normalize_advantage=cfg.normalize_advantage)
    total = terms["loss/policy"] - cfg.entropy_coef * terms["loss/entropy"]
    if cfg.baseline:
        total = total + cfg.value_coef * terms["loss/value"]
    terms["loss/total"] = total
    return terms


PHASES = ROLLOUT_PHASES
METRICS = ("loss/policy", "loss/value", "loss/entropy", "loss/total", "optim/lr")


def build(cfg: REINFORCEConfig, ctx: BuildContext) -> SingleStepLearner:
    """REINFORCE: returns, then one gradient step per batch, with an actor-critic sized from ``ctx``'s
    spaces, its optimizer and reward scaler (REINFORCE draws no random numbers of its own: ``ctx.seed``
    is unused)."""
    objective = partial(reinforce_objective, cfg=cfg)
    return SingleStepLearner(cfg, ctx, objective=objective, names=LOSS_KEYS, baseline=cfg.baseline)


SPEC = AlgorithmSpec(
    config=REINFORCEConfig,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    metrics=METRICS,
)
