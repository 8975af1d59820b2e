"""Target-network updates, in place over whole parameter lists with foreach kernels."""

from __future__ import annotations

import torch
from torch import nn


def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """``target <- (1 - tau) * target + tau * source`` for every parameter (Polyak averaging).

    One ``_foreach_lerp_`` call covers every tensor; ``tau`` 1 is a hard copy.
    """
    _move(list(target.parameters()), list(source.parameters()), tau)


def _move(target: list[torch.Tensor], source: list[torch.Tensor], tau: float) -> None:
    """``target <- lerp(target, source, tau)`` over tensor lists, a copy when ``tau`` is 1."""
    with torch.no_grad():
        if tau >= 1.0:
            torch._foreach_copy_(target, source)
        else:
            torch._foreach_lerp_(target, source, tau)


def hard_update(target: nn.Module, source: nn.Module) -> None:
    """Copy every parameter of ``source`` into ``target``."""
    soft_update(target, source, 1.0)


class TargetSchedule:
    """When to update a target: every ``interval`` gradient steps, softly by ``tau`` (1 = hard copy)."""

    def __init__(self, target: nn.Module, source: nn.Module, *, tau: float, interval: int):
        self.target, self.source = target, source
        # Parameter lists are walked once here, not at every step (a module walk costs more
        # than the foreach kernel for small networks).
        self.target_params: list[torch.Tensor] = list(target.parameters())
        self.source_params: list[torch.Tensor] = list(source.parameters())
        self.tau, self.interval = tau, interval
        self.steps = 0

    def step(self) -> bool:
        """Count one gradient step; update the target when due. Returns whether it did."""
        self.steps += 1
        if self.steps % self.interval:
            return False
        _move(self.target_params, self.source_params, self.tau)
        return True

    def state_dict(self) -> dict:
        return {"steps": self.steps}

    def load_state_dict(self, state: dict) -> None:
        self.steps = state["steps"]
