"""What the loop shares with hooks and callers: the run's state, its hooks and row columns, the
error that stops training, and the snapshot of the last finite weights."""

from __future__ import annotations

import datetime
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from rlcli.loggers import Row
from rlcli.run import Run
from rlcli.timing import Timer

# Defined below the collector, which raises it too; the trainer's name for it stays.
from rlcli.training_error import TrainingError as TrainingError

# Row keys before the algorithm's own METRICS; the timing columns follow them.
BASE_COLUMNS = (
    "iteration",
    "frames",
    "wall_time_s",
    "fps",
    "rollout/episode_return_mean",
    "rollout/episode_length_mean",
    "rollout/episodes",
)

# The columns of [eval], when it is on: empty in the rows of iterations without an evaluation.
EVAL_COLUMNS = ("eval/return_mean", "eval/return_std", "eval/length_mean")


def columns(run: Run) -> list[str]:
    """Every column of the run's rows, fixed before the first one: a term that appears
    late (after an off-policy warm-up) still has its column, empty until then."""
    evaluated = EVAL_COLUMNS if run.evaluator is not None else ()
    return [*BASE_COLUMNS, *evaluated, *run.metrics, *(f"time/{phase}_ms" for phase in run.phases)]


@dataclass
class TrainState:
    """What hooks see: the run, its folder and progress so far."""

    run: Run
    run_dir: Path
    timer: Timer
    iteration: int = 0
    frames: int = 0
    started: float = field(default_factory=time.perf_counter)
    wall_time: float = 0.0
    row: Row = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    best_return: float = math.nan
    last_return: float = math.nan
    solved_at: tuple[int, float] | None = None
    started_at: str = field(
        default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    )
    """When the run started, ISO 8601 in UTC."""
    provenance: dict = field(default_factory=dict)
    """Seed, versions, git commit, overrides: recorded in ``run.json``."""
    startup_s: float | None = None
    """Seconds from process start to the first iteration (Linux only; None elsewhere)."""
    status: str = "running"
    error: str | None = None
    stop_requested: bool = False
    stop_status: str = "interrupted"
    """The status a stop request ends the run with: "interrupted" (a signal), or what the hook that asked
    for it set ("pruned": the tuner's pruner)."""
    stop_signal: str | None = None
    """The signal that stopped the run: "SIGINT" (Ctrl-C) or "SIGTERM" (a scheduler, docker stop)."""
    checkpoint_frames: int = 0
    """Frames at the last checkpoint saved (or resumed from)."""
    eval_frames: int = 0
    """Frames at the last in-training evaluation."""
    last_eval: dict[str, float] = field(default_factory=dict)
    """The ``eval/*`` terms of the last in-training evaluation."""
    final_eval: dict | None = None
    """The evaluation after the last iteration (``eval.final_episodes``): episodes, mean, std, min, max,
    length_mean, deterministic, seconds; or only ``error`` when it could not finish."""
    checkpoint_path: Path | None = None
    checkpoint_seconds: float = 0.0
    """Seconds spent writing checkpoints in this process."""
    resumes: list[dict] = field(default_factory=list)
    """One entry per resume of this run: when, from which frames, and how."""
    lock: int | None = None
    """The descriptor holding the run folder's lock until the folder is complete."""
    returns: deque = field(default_factory=deque)
    """The returns of the last ``run.return_window`` episodes, of every rank."""
    lengths: deque = field(default_factory=deque)
    episodes: int = 0
    """Episodes finished so far, by every rank."""
    seen_episodes: int = 0
    """Episodes this rank's envs had finished at the last iteration (their own count)."""

    @property
    def fps(self) -> float:
        return self.frames / self.wall_time if self.wall_time > 0 else 0.0


Hook = Callable[[TrainState], None]
EvalHook = Callable[[TrainState, int, int], None]
"""Told the state, the episodes the final evaluation has finished and its episodes in all."""


@dataclass
class Hooks:
    """Callables run at named points of the loop, in list order."""

    on_run_start: list[Hook] = field(default_factory=list)
    on_iteration_end: list[Hook] = field(default_factory=list)
    on_final_eval_episode: list[EvalHook] = field(default_factory=list)
    """At the final evaluation's start and after each of its episodes (before ``on_run_end``)."""
    on_run_end: list[Hook] = field(default_factory=list)


class WeightsSnapshot:
    """A preallocated copy of the agent's state (every network, targets and statistics included),
    refreshed in place each iteration so that a failed run can save the last finite weights."""

    def __init__(self, agent: torch.nn.Module):
        self.agent = agent
        self.saved = {name: value.detach().clone() for name, value in agent.state_dict().items()}

    def take(self) -> None:
        torch._foreach_copy_(list(self.saved.values()), list(self.agent.state_dict().values()))

    def restore(self) -> None:
        self.agent.load_state_dict(self.saved)


def weights_finite(agent: torch.nn.Module) -> bool:
    """Whether every parameter is finite (the norm of a tensor with an inf or NaN is not)."""
    norms = torch._foreach_norm([p.detach() for p in agent.parameters()])
    return bool(torch.stack(norms).isfinite().all()) if norms else True
