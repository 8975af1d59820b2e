"""Optimizers and learning-rate schedules from ``[optim]``, by explicit tables."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence

import torch
from torch.optim.lr_scheduler import LambdaLR

from rlcli.runtime.distributed import Group, Single


# Fused kernels (one call for every parameter) run on CPU and CUDA alike; for
# small networks they cut the optimizer step to a third of the foreach one.
def _adam(cfg, params):
    return torch.optim.Adam(
        params, lr=cfg.lr, betas=tuple(cfg.betas), eps=cfg.eps, weight_decay=cfg.weight_decay, fused=True
    )


def _adamw(cfg, params):
    return torch.optim.AdamW(
        params, lr=cfg.lr, betas=tuple(cfg.betas), eps=cfg.eps, weight_decay=cfg.weight_decay, fused=True
    )


def _sgd(cfg, params):
    return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay, fused=True)


def _rmsprop(cfg, params):
    return torch.optim.RMSprop(
        params,
        lr=cfg.lr,
        alpha=cfg.alpha,
        eps=cfg.eps,
        momentum=cfg.momentum,
        weight_decay=cfg.weight_decay,
        foreach=True,
    )


OPTIMIZERS: dict[str, Callable] = {"adam": _adam, "adamw": _adamw, "sgd": _sgd, "rmsprop": _rmsprop}

# Factor applied to the initial value, by fraction of the run done (0 -> 1).
SCHEDULES: dict[str, Callable[[float], float]] = {
    "constant": lambda done: 1.0,
    "linear": lambda done: max(1.0 - done, 0.0),
    "cosine": lambda done: 0.5 * (1.0 + math.cos(math.pi * min(done, 1.0))),
}


def make_optimizer(cfg, params: Iterable[torch.nn.Parameter]) -> torch.optim.Optimizer:
    """The optimizer named by ``cfg`` (an OptimConfig) over ``params``."""
    return OPTIMIZERS[cfg.name](cfg, list(params))


def make_scheduler(cfg, optimizer: torch.optim.Optimizer, iterations: int) -> LambdaLR:
    """Steps once per iteration; the rate reaches its schedule's end after ``iterations``."""
    factor = SCHEDULES[cfg.lr_schedule]
    return LambdaLR(optimizer, lambda step: factor(step / max(iterations, 1)))


def clip_gradients(params: list[torch.nn.Parameter], max_norm: float) -> None:
    """Clip the global gradient norm; ``max_norm`` 0 leaves gradients as they are."""
    if max_norm > 0:
        torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True)


class GradientStep:
    """The optimizer, its schedule and gradient clipping of ``[optim]`` over some parameters.

    Algorithms hold one and call it with each loss; the trainer reads its ``lr``. Across the
    ranks of ``group`` the gradients are averaged between backward and clipping, so that every
    rank takes the same step.
    """

    def __init__(
        self,
        cfg,
        params: Iterable[torch.nn.Parameter],
        iterations: int,
        group: Group | None = None,
        *,
        networks: Sequence[Sequence[torch.nn.Parameter]] | None = None,
    ):
        self.params = list(params)
        self.group = group or Single()
        self.optimizer = make_optimizer(cfg, self.params)
        self.scheduler = make_scheduler(cfg, self.optimizer, iterations)
        self.max_grad_norm = cfg.max_grad_norm
        # [optim] clip_scope = "networks": each network's weights (``networks``, which cover ``params``) clipped apart.
        apart = getattr(cfg, "clip_scope", "all") == "networks" and networks is not None
        self.clipped = [list(part) for part in networks] if apart and networks is not None else [self.params]

    @property
    def lr(self) -> float:
        return self.optimizer.param_groups[0]["lr"]

    def __call__(self, loss: torch.Tensor, timer, *, rows: torch.Tensor | int | None = None) -> None:
        """Backpropagate ``loss`` (a scalar), clip and take one optimizer step, timed by ``timer``.

        ``rows``: how many samples ``loss`` is the mean over, when that differs between ranks
        (masked rows); across ranks the gradients are then weighted by it, so that every sample
        weighs the same, as in one process. Without it, every rank weighs the same.
        """
        with timer.phase("update.backward"):
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
        self.group.average_gradients(self.params, timer, weight=rows)
        with timer.phase("update.optimizer"):
            for part in self.clipped:
                clip_gradients(part, self.max_grad_norm)
            self.optimizer.step()

    def end_iteration(self) -> None:
        """Advance the learning-rate schedule by one iteration."""
        # The schedule runs over the whole run, warm-up iterations (no optimizer step
        # yet, as in off-policy methods) included; torch warns about exactly that.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step", category=UserWarning)
            self.scheduler.step()

    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
