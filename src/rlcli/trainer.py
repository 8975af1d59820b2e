"""The training loop: collect -> learn -> check -> log, the same for every algorithm, with hooks."""

from __future__ import annotations

import datetime
import math
import signal
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from rlcli import checkpoint
from rlcli.config.dump import to_toml
from rlcli.config.errors import folder_error
from rlcli.interrupts import on_stop_signals
from rlcli.loggers import MetricLoggers, Row, make_loggers
from rlcli.provenance import provenance
from rlcli.run import Run
from rlcli.timing import Timer, since_process_start

# Row keys before the algorithm's own METRICS; the timing columns follow them.
BASE_COLUMNS = (
    "iteration", "frames", "wall_time_s", "fps",
    "rollout/episode_return_mean", "rollout/episode_length_mean", "rollout/episodes",
)


def columns(run: Run) -> list[str]:
    """Every column of the run's rows, fixed before the first one: a term that appears
    late (after an off-policy warm-up) still has its column, empty until then."""
    return [*BASE_COLUMNS, *run.metrics, *(f"time/{phase}_ms" for phase in run.phases)]


class TrainingError(Exception):
    """Training cannot go on: a loss term or the weights became NaN or infinite."""

    def __init__(self, iteration: int, term: str, value: float):
        self.iteration, self.term, self.value = iteration, term, value
        super().__init__(f"iteration {iteration}: {term} is {value}; training stopped "
                         "(final.pt holds the weights of the iteration before)")


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
    started_at: str = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc)
                            .isoformat(timespec="seconds"))
    """When the run started, ISO 8601 in UTC."""
    provenance: dict = field(default_factory=dict)
    """Seed, versions, git commit, overrides: recorded in ``run.json``."""
    startup_s: float | None = None
    """Seconds from process start to the first iteration (Linux only; None elsewhere)."""
    status: str = "running"
    error: str | None = None
    stop_requested: bool = False
    stop_signal: str | None = None
    """The signal that stopped the run: "SIGINT" (Ctrl-C) or "SIGTERM" (a scheduler, docker stop)."""

    @property
    def fps(self) -> float:
        return self.frames / self.wall_time if self.wall_time > 0 else 0.0


Hook = Callable[[TrainState], None]


@dataclass
class Hooks:
    """Callables run at named points of the loop, in list order."""

    on_run_start: list[Hook] = field(default_factory=list)
    on_iteration_end: list[Hook] = field(default_factory=list)
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


def train(run: Run, *, hooks: Hooks | None = None) -> TrainState:
    """Train ``run`` to its frame budget or stop condition, leaving a complete run folder.

    The folder holds ``config.toml``, ``metrics.csv``/``metrics.jsonl`` (one row
    per logged iteration), ``final.pt`` and ``run.json`` with the final status:
    ``completed``, ``solved`` (``run.stop_at_return`` reached), ``interrupted``
    (Ctrl-C) or ``failed``.

    Raises:
        TrainingError: a loss became non-finite; the folder is written first.
    """
    hooks = hooks or Hooks()
    cfg = run.cfg
    try:
        run_dir = run.folder.path
        (run_dir / "config.toml").write_text(to_toml(cfg), encoding="utf-8")
        state = TrainState(run=run, run_dir=run_dir, timer=Timer(run.device),
                           provenance=provenance(cfg.run.seed, **run.origin))
        _write_status(state)
        loggers = make_loggers(cfg.logger, run_dir, columns(run))
    except OSError as exc:
        run.close()
        raise folder_error(cfg.run.output_dir, exc) from None
    except BaseException:
        run.close()
        raise
    # The signal handlers stay until the folder is complete: a first SIGINT/SIGTERM during
    # the final save only asks for a stop, which has already happened.
    with _stop_on_ctrl_c(state):
        _loop(run, state, loggers, hooks)
    return state


def _loop(run: Run, state: TrainState, loggers: MetricLoggers, hooks: Hooks) -> None:
    """Iterate until the budget, the stop condition or a stop request; always complete the folder."""
    pending: Row | None = None
    try:
        snapshot = WeightsSnapshot(run.algo.agent)
        for hook in hooks.on_run_start:
            hook(state)
        state.started = time.perf_counter()
        state.startup_s = since_process_start()
        while state.iteration < run.iterations and state.status == "running" and not state.stop_requested:
            pending = _iteration(run, state, loggers, pending, snapshot)
            for hook in hooks.on_iteration_end:
                hook(state)
        if state.stop_requested and state.status == "running":
            state.status = "interrupted"
        if state.status == "running":
            state.status = "completed"
    except KeyboardInterrupt:
        state.status = "interrupted"
    except TrainingError as exc:
        state.status, state.error = "failed", str(exc)
        raise
    except Exception as exc:
        state.status, state.error = "failed", f"{type(exc).__name__}: {exc}"
        raise
    finally:
        state.wall_time = time.perf_counter() - state.started
        # The rows not yet written: the one due by logger.interval, and always the last one.
        for row in (pending, state.row):
            if row and row["iteration"] > loggers.last_iteration:
                loggers.write(row)
        loggers.close()
        _save_final(state)
        _write_status(state)
        run.close()
        for hook in hooks.on_run_end:
            hook(state)


def _stop_on_ctrl_c(state: TrainState) -> AbstractContextManager[None]:
    """Turn the first SIGINT (Ctrl-C) or SIGTERM (a scheduler, ``docker stop``) into a stop at
    the end of the iteration, so that the metrics and weights saved are those of whole
    iterations; a second signal stops at once. Either way the folder is completed.
    """

    def request_stop(signum: int) -> None:
        if state.stop_requested:
            raise KeyboardInterrupt
        state.stop_requested = True
        state.stop_signal = signal.Signals(signum).name

    return on_stop_signals(request_stop)


def _iteration(run: Run, state: TrainState, loggers: MetricLoggers, pending: Row | None,
               snapshot: WeightsSnapshot) -> Row | None:
    """One collect -> learn -> check -> log round; returns the row still to write."""
    timer, algo, cfg = state.timer, run.algo, run.cfg
    with timer.phase("iteration"):
        with timer.phase("collect"):
            batch = run.collector.collect(timer)
        # Kept so that a failed run saves the last weights that gave finite losses.
        snapshot.take()
        with timer.phase("update"):
            terms = algo.learn(batch, timer)
        for name, value in terms.items():
            if not math.isfinite(value):
                snapshot.restore()
                raise TrainingError(state.iteration + 1, name, value)
        # A finite loss can still leave non-finite weights (an inf gradient through clipping).
        if not weights_finite(algo.agent):
            snapshot.restore()
            raise TrainingError(state.iteration + 1, "a network weight", math.nan)
        with timer.phase("log"):
            # Rows are written one iteration late, so each holds its own log time.
            if pending is not None:
                loggers.write(pending)
    state.phases = timer.end_iteration()
    state.iteration += 1
    state.frames = run.collector.frames
    state.wall_time = time.perf_counter() - state.started
    returns = run.envs.return_queue
    state.last_return = float(np.mean(returns)) if returns else math.nan
    if math.isfinite(state.last_return) and not state.best_return >= state.last_return:
        state.best_return = state.last_return
    target = cfg.run.stop_at_return
    # "Solved" means the mean of a full window of run.return_window episodes, never of the first few.
    if target is not None and len(returns) == returns.maxlen and state.last_return >= target:
        state.solved_at = (state.frames, state.wall_time)
        state.status = "solved"
    state.row = _row(state, terms)
    if state.iteration % cfg.logger.interval == 0 or state.status != "running":
        return state.row
    return None


def _row(state: TrainState, terms: dict[str, float]) -> Row:
    lengths = state.run.envs.length_queue
    row: Row = {
        "iteration": state.iteration,
        "frames": state.frames,
        "wall_time_s": round(state.wall_time, 4),
        "fps": round(state.fps, 1),
        "rollout/episode_return_mean": state.last_return,
        "rollout/episode_length_mean": float(np.mean(lengths)) if lengths else math.nan,
        "rollout/episodes": int(state.run.envs.episode_count),
        **terms,
    }
    for phase in state.run.phases:
        row[f"time/{phase}_ms"] = round(state.phases.get(phase, 0.0) * 1000, 3)
    return row


def _save_final(state: TrainState) -> None:
    run = state.run
    checkpoint.save(state.run_dir / "final.pt", checkpoint.to_cpu({
        "format": 1,
        "algo": run.cfg.algo.name,
        "env": run.cfg.env.id,
        "iteration": state.iteration,
        "frames": state.frames,
        "agent": run.algo.agent.state_dict(),
        "algo_state": run.algo.state_dict(),
    }))


def _write_status(state: TrainState) -> None:
    solved = state.solved_at
    checkpoint.write_json(state.run_dir / "run.json", {
        "status": state.status,
        "error": state.error,
        "signal": state.stop_signal,
        "algo": state.run.cfg.algo.name,
        "env": state.run.cfg.env.id,
        "device": str(state.run.device),
        "iterations": state.iteration,
        "frames": state.frames,
        "planned_iterations": state.run.iterations,
        "planned_frames": state.run.cfg.collector.frames,
        "wall_time_s": round(state.wall_time, 3),
        "fps": round(state.fps, 1),
        "best_return": None if math.isnan(state.best_return) else state.best_return,
        "last_return": None if math.isnan(state.last_return) else state.last_return,
        "solved_at_frames": solved[0] if solved else None,
        "solved_at_seconds": round(solved[1], 3) if solved else None,
        "timing": state.timer.breakdown(state.run.phases),
        "started_at": state.started_at,
        "startup_s": None if state.startup_s is None else round(state.startup_s, 3),
        **state.provenance,
    })
