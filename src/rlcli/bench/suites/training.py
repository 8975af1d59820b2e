"""The suite of whole training runs (``train``): a short run of each shipped preset through the real
trainer, bounded by time rather than frames, and stopped at once by a stop signal."""

from __future__ import annotations

import json
import signal
import time
from typing import TYPE_CHECKING

from rlcli.bench import BenchStopped
from rlcli.bench.measure import Case
from rlcli.bench.suites.options import BenchOptions, SuiteOutput, preset_configs, short_warm_up
from rlcli.run import build_run
from rlcli.runtime.interrupts import STOP_SIGNALS
from rlcli.trainer.loop import train
from rlcli.trainer.state import Hooks

if TYPE_CHECKING:
    from rlcli.config.schema import RunConfig

TRAIN_WINDOW_S = 0.25
"""Seconds (at least; whole iterations) of each timed window of a train case."""
TRAIN_BUDGET_S = 4.0
"""Seconds a train case trains past its warm-up at most, however few windows that gives."""


def train_suite(opts: BenchOptions) -> SuiteOutput:
    """End-to-end frames/s of each preset through the real trainer, timed past its warm-up."""
    configs = preset_configs(opts, *overrides(opts))
    return train_cases(opts, {name: short_warm_up(cfg) for name, cfg in configs.items()}), []


def overrides(opts: BenchOptions) -> list[str]:
    """What a train case changes in its preset: a run folder in the bench's scratch folder, no
    evaluation, no periodic checkpoint, no replay in the final one."""
    folder = (opts.scratch / "train").as_posix()
    return [
        f"run.output_dir={json.dumps(folder)}",
        "eval.every_frames=0",
        "eval.final_episodes=0",
        "checkpoint.every_frames=0",
        "checkpoint.replay=false",
    ]


def train_cases(opts: BenchOptions, configs: dict[str, RunConfig]) -> list[Case]:
    """End-to-end frames/s of each config (a preset with :func:`overrides`, its warm-up cut short)
    through the real trainer (collect, learn, log): one run each, in windows of whole iterations (a
    quick bench: ppo_cartpole alone).

    A run is bounded by time, not frames: it stops after ``repeat`` windows or ``TRAIN_BUDGET_S``
    (a third of it, quick). The timing starts after the first iteration that learned, so that neither
    an off-policy warm-up nor first-call costs count.
    """
    # The bench's own handlers: a run re-installs them over the trainer's, so that a stop signal
    # ends the bench at once rather than the run at its iteration's end.
    handlers = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    window, budget = (0.2, TRAIN_BUDGET_S / 3) if opts.quick else (TRAIN_WINDOW_S, TRAIN_BUDGET_S)
    cases = []
    for name, cfg in configs.items():
        if opts.quick and name != "ppo_cartpole":
            continue
        cfg = cfg.model_copy(update={"run": cfg.run.model_copy(update={"stop_at_return": None})})

        def timed(repeat: int, min_seconds: float, cfg=cfg) -> list[float]:
            windows = _Windows(repeat, max(min_seconds, window), budget)
            hooks = Hooks(on_run_start=[lambda state: _install(handlers)], on_iteration_end=[windows.after])
            state = train(build_run(cfg), hooks=hooks)
            if state.stop_signal is not None:
                raise BenchStopped(signal.Signals[state.stop_signal])
            return windows.rates

        cases.append(
            Case(
                "train",
                name,
                {"frames_per_batch": cfg.collector.frames_per_batch},
                "frames/s",
                cfg.collector.frames_per_batch,
                None,
                timed=timed,
            )
        )
    return cases


def _install(handlers: dict) -> None:
    for signum, handler in handlers.items():
        if callable(handler) or handler in (signal.SIG_DFL, signal.SIG_IGN):
            signal.signal(signum, handler)


class _Windows:
    """The hook that times a train case: frames/s over windows of at least ``seconds`` from the end
    of the first iteration that learned, until ``repeat`` windows or ``budget`` seconds."""

    def __init__(self, repeat: int, seconds: float, budget: float):
        self.repeat, self.seconds, self.budget = repeat, seconds, budget
        self.rates: list[float] = []
        self.began: float | None = None
        self.start, self.frames = 0.0, 0

    def after(self, state) -> None:
        now = time.perf_counter()
        if self.began is None:
            if any(key.startswith("loss/") for key in state.row):
                self.began = self.start = now
                self.frames = state.frames
            return
        if now - self.start >= self.seconds:
            self.rates.append((state.frames - self.frames) / (now - self.start))
            self.start, self.frames = now, state.frames
        if len(self.rates) >= self.repeat or now - self.began >= self.budget:
            state.stop_requested, state.stop_status = True, "completed"
