"""The pool of ``rlcli tune``'s trial processes: each trial is one ``rlcli train`` process per seed
(one seed after the other, ``jobs`` trials at a time), and the pool tells the study what came of it.

A trial's process appends its return every ``report_every`` frames to a file
(:mod:`rlcli.tune.reporter`); the pool passes each value to the pruner (its step: the frames the
trial has trained, its seeds counted one after the other) and, when the pruner says so, creates the
trial's prune file: the run stops at its next iteration with a checkpoint and ``run.json`` saying
``pruned``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlcli.config.errors import ConfigError
from rlcli.config.load import load_config
from rlcli.runtime.child_runs import SeedRun, read_outcome, train_command
from rlcli.runtime.cores import share_for_jobs
from rlcli.runtime.interrupts import on_stop_signals
from rlcli.tune import study as studies
from rlcli.tune.reporter import TrialSpec
from rlcli.tune.space import Space, overrides

Event = Callable[[str, Any], None]
"""What the pool tells its caller: ("start", the :class:`Running` trial) or ("end", its study row)."""


@dataclass
class Running:
    """A trial in progress: its Optuna trial, its folder and the seed now training."""

    trial: Any
    values: dict[str, Any]
    folder: Path
    seeds: list[int]
    budget: int
    index: int = 0
    proc: subprocess.Popen | None = None
    log: Any = None
    started: float = 0.0
    outcomes: list[tuple[SeedRun, dict]] = field(default_factory=list)
    read: int = 0
    last_step: int = -1
    pruning: bool = False
    signalled: int = 0

    @property
    def name(self) -> str:
        return f"trial-{self.trial.number:04d}"


class Pool:
    """The trials in progress, ``jobs`` at a time, and the signals received meanwhile: :meth:`run`
    asks the study for trials while it wants more, starts each seed's process, passes reports to the
    pruner and signals to the processes, and tells the study how each trial ended."""

    def __init__(
        self,
        study: Any,
        optuna: Any,
        space: Space,
        preset: Path,
        set_: list,
        packages: list,
        *,
        seeds: list[int],
        jobs: int,
        trials: int,
        objective: str,
        report_every: int,
        folder: Path,
        requeue: bool,
        on_event: Event | None,
    ):
        self.study, self.optuna, self.space, self.preset, self.set_ = study, optuna, space, preset, set_
        self.packages, self.seeds, self.jobs, self.trials = packages, seeds, jobs, trials
        self.objective, self.report_every, self.folder, self.on_event = objective, report_every, folder, on_event
        self.running: list[Running] = []
        self.signals: list[int] = []
        self.ran = self.failed = 0
        self.requeued: list[int] = []
        self.requeue = requeue
        self.last_beat = self.last_fill = self.last_stale = 0.0

    def run(self, timeout: float | None) -> None:
        started = time.monotonic()
        with on_stop_signals(self.signals.append):
            while True:
                self.forward()
                for trial in list(self.running):
                    self.poll(trial)
                self.heartbeat()
                late = timeout is not None and time.monotonic() - started > timeout
                if not self.signals and not late and len(self.running) < self.jobs:
                    finished = self.fill()
                    if finished >= self.trials and not self.running:
                        return
                elif not self.running:
                    return
                time.sleep(0.05)

    def emit(self, event: str, payload: Any) -> None:
        if self.on_event is not None:
            self.on_event(event, payload)

    def fill(self) -> int:
        """Start trials while there are free slots and the study wants more; returns its finished count."""
        now = time.monotonic()
        if now - self.last_fill < 0.25:
            return -1
        self.last_fill = now
        if now - self.last_stale > studies.GRACE_S / 4:
            studies.fail_stale(self.study)
            if self.requeue:
                self.requeued += studies.requeue_failed(self.study)
            self.last_stale = now
        # Workers on one machine count and ask one at a time, so that together they ask no more than the
        # study's trials; workers on other machines can overshoot by a trial.
        with studies.locked(self.folder / ".ask.lock"):
            finished, running = studies.counts(self.study)
            # A tuner asks at most --trials trials itself: a space whose every trial fails ends.
            while len(self.running) < self.jobs and finished + running < self.trials and self.ran < self.trials:
                self.ask()
                running += 1
        return finished if self.ran < self.trials else self.trials

    def ask(self) -> None:
        trial = self.study.ask()
        studies.heartbeat(self.study, [trial])
        trial.set_user_attr("tuner", f"{socket.gethostname()}:{os.getpid()}")
        self.ran += 1
        try:
            values = {param.key: param.suggest(trial) for param in self.space.params}
        except BaseException:
            self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
            raise
        try:
            cfg = load_config(self.preset, [*self.set_, *overrides(values, trial.number)])
        except ConfigError as exc:
            # A combination the fields' own bounds allow but the config's checks between fields refuse.
            trial.set_user_attr("reason", "invalid config: " + "; ".join(i.render() for i in exc.issues))
            self.study.tell(trial, state=self.optuna.trial.TrialState.PRUNED)
            self.emit("end", self.row(trial.number))
            return
        budget = cfg.data.total_steps if cfg.data is not None else cfg.collector.total_frames
        running = Running(trial, values, self.folder / f"trial-{trial.number:04d}", list(self.seeds), budget)
        running.folder.mkdir(parents=True, exist_ok=True)
        self.running.append(running)
        self.emit("start", running)
        self.start_seed(running)

    def start_seed(self, running: Running) -> None:
        seed = running.seeds[running.index]
        spec_file = running.folder / f"seed-{seed}.trial.json"
        TrialSpec(
            self.report_every,
            str(running.folder / f"seed-{seed}.reports.jsonl"),
            str(running.folder / "prune"),
            os.getpid(),
            studies.objective_group(self.objective),
        ).write(spec_file)
        command = [
            *train_command(self.preset, [*self.set_, *overrides(running.values, running.trial.number)], self.packages),
            "--seed",
            str(seed),
            "--out",
            str(running.folder),
            "--set",
            f"run.name={json.dumps(f'{running.name}-seed{seed}')}",
            "--tune-trial",
            str(spec_file),
        ]
        running.log = (running.folder / f"seed-{seed}.log").open("w", encoding="utf-8")
        running.read = 0
        # Its own session: a Ctrl-C at the terminal reaches the tuner, which passes it on once.
        running.proc = subprocess.Popen(
            command,
            stdout=running.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "COLUMNS": "200", **share_for_jobs(self.jobs)},
        )
        running.started = time.perf_counter()

    def forward(self) -> None:
        """Pass each signal received on to every running trial once; a third one kills them."""
        for running in self.running:
            # A trial's process starts as soon as it is listed (start).
            assert running.proc is not None
            while running.signalled < len(self.signals) and running.proc.poll() is None:
                running.proc.send_signal(signal.SIGKILL if running.signalled >= 2 else self.signals[running.signalled])
                running.signalled += 1

    def heartbeat(self) -> None:
        now = time.monotonic()
        if now - self.last_beat > studies.HEARTBEAT_S / 2:
            studies.heartbeat(self.study, [running.trial for running in self.running])
            self.last_beat = now

    def poll(self, running: Running) -> None:
        self.report(running)
        assert running.proc is not None  # as in forward
        code = running.proc.poll()
        if code is None:
            return
        running.log.close()
        seed = running.seeds[running.index]
        outcome = SeedRun(seed)
        read_outcome(outcome, running.folder, running.name, code, time.perf_counter() - running.started)
        self.report(running)
        info = _run_json(outcome.run_dir)
        running.outcomes.append((outcome, info))
        state = self.optuna.trial.TrialState
        if outcome.status == "pruned":
            self.finish(running, state.PRUNED)
        elif outcome.status in ("completed", "solved"):
            running.index += 1
            if running.index < len(running.seeds) and not self.signals:
                self.start_seed(running)
            else:
                self.finish(running, state.COMPLETE)
        else:
            reason = outcome.reason or (
                f"stopped by {signal.Signals(self.signals[0]).name}" if self.signals else outcome.status
            )
            running.trial.set_user_attr("reason", f"seed {seed}: {reason}")
            self.finish(running, state.FAIL)

    def report(self, running: Running) -> None:
        """Pass the trial's new values to the pruner; ask its run to stop when the pruner says so."""
        path = running.folder / f"seed-{running.seeds[running.index]}.reports.jsonl"
        try:
            with path.open("rb") as handle:
                handle.seek(running.read)
                chunk = handle.read()
        except OSError:
            return
        # Only whole lines: the trial may be writing the next one.
        whole = chunk[: chunk.rfind(b"\n") + 1]
        running.read += len(whole)
        for line in whole.decode("utf-8").splitlines():
            report = json.loads(line)
            step = running.index * running.budget + int(report["frames"])
            if step <= running.last_step:
                continue
            value = float(report["value"])
            running.trial.report(value if studies.direction(self.objective) == "maximize" else -value, step)
            running.last_step = step
            if not running.pruning and running.trial.should_prune():
                running.pruning = True
                (running.folder / "prune").touch()

    def finish(self, running: Running, state: Any) -> None:
        """Tell the study how the trial ended."""
        self.running.remove(running)
        trial = running.trial
        trial.set_user_attr("frames", sum(o.frames or 0 for o, _ in running.outcomes))
        trial.set_user_attr("seconds", round(sum(o.wall_s or 0.0 for o, _ in running.outcomes), 2))
        trial.set_user_attr("folder", str(running.folder))
        if state == self.optuna.trial.TrialState.COMPLETE:
            values = [_objective(info, self.objective) for _, info in running.outcomes]
            finite = [v for v in values if v is not None and math.isfinite(v)]
            if len(finite) == len(values):
                self.study.tell(trial, sum(finite) / len(finite))
            else:
                trial.set_user_attr("reason", "no return was measured (no episode ended)")
                self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, state=state)
        self.failed += self.row(trial.number).state == "FAIL"
        self.emit("end", self.row(trial.number))

    def row(self, number: int) -> studies.TrialRow:
        return next(r for r in studies.rows(self.study) if r.number == number)


def _run_json(run_dir: str | None) -> dict:
    if run_dir is None:
        return {}
    try:
        return json.loads((Path(run_dir) / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _objective(info: dict, objective: str) -> float | None:
    """One seed's objective from its ``run.json``."""
    if objective == "frames":
        solved = info.get("solved_at_frames")
        return float(solved if solved is not None else info.get("planned_frames") or math.nan)
    last_eval = info.get("last_eval") or {}
    group = studies.objective_group(objective)
    if group is not None:
        value = last_eval.get(f"return_mean/{group}", (info.get("last_group_returns") or {}).get(group))
    else:
        value = last_eval.get("return_mean", info.get("last_return"))
    return None if value is None else float(value)
