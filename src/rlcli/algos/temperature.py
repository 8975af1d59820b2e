"""The entropy temperature of the squashed-Gaussian actor-critics (SAC, TQC, CrossQ, CQL): what their actor
step reads of an agent, the parameters it moves, the loss it minimises and the entropy it aims for
(Haarnoja et al., 2018, "Soft Actor-Critic Algorithms and Applications", section 5)."""

from __future__ import annotations

from typing import Protocol

import torch
from torch import nn

from rlcli.models.critics import QEnsemble


class Tempered(Protocol):
    """What SAC's actor loss and actor step read of an agent: SAC's, CrossQ's and CQL's alike (an actor, a critic
    ensemble and a log-temperature)."""

    @property
    def actor(self) -> nn.Module: ...
    @property
    def critic(self) -> QEnsemble: ...
    @property
    def log_alpha(self) -> nn.Parameter: ...


def actor_parameters(agent: Tempered, autotune: bool) -> list[nn.Parameter]:
    """What one actor step moves: the actor's parameters, then, with ``autotune``, the log-temperature. The
    actor and temperature losses touch disjoint parameters (alpha is detached in the actor's loss), so one
    backward of their sum and one optimizer serve both."""
    tuned = [agent.log_alpha] if autotune else []
    return [*agent.actor.parameters(), *tuned]


def actor_objective(terms: dict[str, torch.Tensor], autotune: bool) -> torch.Tensor:
    """What that step minimises: ``loss/actor``, plus ``loss/alpha`` with ``autotune``."""
    return terms["loss/actor"] + terms["loss/alpha"] if autotune else terms["loss/actor"]


def entropy_target(target_entropy: float | None, act_dim: int) -> float:
    """The entropy the temperature aims for: ``target_entropy``, or ``-act_dim`` when unset (SAC's heuristic)."""
    return float(target_entropy) if target_entropy is not None else -float(act_dim)
