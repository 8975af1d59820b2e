"""``rlcli tune``'s search: Optuna asks for trials, each trial is one ``rlcli train`` process per seed
(one seed after the other, ``jobs`` trials at a time), and the tuner tells the study what came of it.

The tuner alone talks to the study's storage. A trial's process appends its return every
``report_every`` frames to a file (:mod:`rlcli.tune.reporter`); the tuner passes each value to the
pruner (its step: the frames the trial has trained, its seeds counted one after the other) and, when
the pruner says so, creates the trial's prune file: the run stops at its next iteration with a
checkpoint and ``run.json`` saying ``pruned``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlcli.config.dump import to_toml
from rlcli.config.errors import ConfigError, InputError
from rlcli.config.load import Override, load_config
from rlcli.config.presets import find_preset
from rlcli.envs import import_env_packages
from rlcli.interrupts import on_stop_signals
from rlcli.loggers import check_backends
from rlcli.child_runs import SeedRun, read_outcome, train_command
from rlcli.tune import study as studies
from rlcli.tune.reporter import TrialSpec
from rlcli.tune.space import Space, overrides, read_space

Event = Callable[[str, Any], None]


@dataclass
class TuneResult:
    """A search's outcome, read back from its study (every worker's trials)."""

    study: str
    storage: str
    folder: Path
    objective: str
    direction: str
    rows: list[studies.TrialRow] = field(default_factory=list)
    best: studies.TrialRow | None = None
    importances: dict[str, float] = field(default_factory=dict)
    best_toml: Path | None = None
    requeued: list[int] = field(default_factory=list)
    ran: int = 0
    """Trials this tuner ran (others may have run on other workers)."""
    failed: int = 0
    """Of those, the ones that failed."""
    stop_signal: str | None = None
    """"SIGINT" or "SIGTERM" when a signal stopped the search."""


@dataclass
class _Running:
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


def tune(
    preset: str | Path,
    space_file: Path,
    *,
    trials: int = 24,
    jobs: int = 1,
    timeout: float | None = None,
    study: str | None = None,
    storage: str | None = None,
    seeds: int = 1,
    sampler: str = "tpe",
    pruner: str = "median",
    objective: str = "return",
    out: Path | None = None,
    set_: Sequence[str | Override] = (),
    env_packages: Sequence[str] = (),
    requeue: bool = False,
    on_event: Event | None = None,
) -> TuneResult:
    """Search ``space_file``'s space over ``preset`` until the study holds ``trials`` finished trials
    (complete or pruned; a study another worker shares counts theirs), ``jobs`` trials at a time.

    Every input is checked before anything is written. A SIGINT or SIGTERM stops every running trial
    with a checkpoint and marks it failed (or pruned, when the pruner had asked) in the study.

    Raises:
        ConfigError: the preset, an override, the space or a flag is bad input (exit 2).
    """
    optuna = studies.import_optuna()
    _check_flags(trials, jobs, seeds, timeout, objective, sampler, pruner)
    import_env_packages(env_packages)
    path = find_preset(preset)
    cfg = load_config(path, set_)
    space = read_space(Path(space_file), cfg)
    check_backends(cfg.logger, source=str(path))
    if objective == "frames" and cfg.run.stop_at_return is None:
        raise InputError("--objective frames", "needs run.stop_at_return in the preset (or --set it)")
    budget = cfg.data.total_steps if cfg.offline else cfg.collector.total_frames
    report_every = space.report_every or max(1, budget // 10)
    name = study or path.stem
    folder = Path(out or Path(cfg.run.output_dir) / "tune") / name
    url = storage or f"sqlite:///{(folder / 'study.db').resolve()}"
    direction = studies.OBJECTIVES[objective]
    the_sampler = studies.make_sampler(sampler, startup_trials=space.startup_trials)
    the_pruner = studies.make_pruner(
        pruner, report_every=report_every, budget=budget, seeds=seeds, startup_trials=space.startup_trials
    )
    opened = studies.open_storage(url)
    the_study = studies.open_study(
        name, opened, direction=direction, preset=str(path), objective=objective, sampler=the_sampler, pruner=the_pruner
    )
    studies.check_space(the_study, list(space.params), name)
    folder.mkdir(parents=True, exist_ok=True)
    result = TuneResult(name, url, folder, objective, direction)
    grouping, parent = studies.grouping(cfg.logger, the_study, name)
    pool = _Pool(
        the_study,
        optuna,
        space,
        path,
        [*set_, *grouping],
        list(env_packages),
        seeds=[cfg.run.seed + i for i in range(seeds)],
        jobs=jobs,
        trials=trials,
        objective=objective,
        report_every=report_every,
        folder=folder,
        requeue=requeue,
        on_event=on_event,
    )
    try:
        pool.run(timeout)
    finally:
        result.ran, result.requeued, result.failed = pool.ran, pool.requeued, pool.failed
        if pool.signals:
            result.stop_signal = signal.Signals(pool.signals[0]).name
    _read_back(result, the_study, space, path, list(set_))
    if parent is not None:
        from rlcli.loggers.tracking import end_study_run

        best = None if result.best is None else {"value": result.best.value, "params": result.best.params}
        end_study_run(cfg.logger, parent, best)
    return result


def _check_flags(
    trials: int, jobs: int, seeds: int, timeout: float | None, objective: str, sampler: str, pruner: str
) -> None:
    for flag, value in (("--trials", trials), ("--jobs", jobs), ("--seeds", seeds)):
        if value < 1:
            raise InputError(f"{flag} {value}", "must be at least 1")
    if timeout is not None and not timeout > 0:
        raise InputError(f"--timeout {timeout}", "must be a number of seconds > 0")
    if objective not in studies.OBJECTIVES:
        raise InputError(f"--objective {objective}", f"unknown objective; allowed: {', '.join(studies.OBJECTIVES)}")
    if sampler not in studies.SAMPLERS:
        raise InputError(f"--sampler {sampler}", f"unknown sampler; allowed: {', '.join(studies.SAMPLERS)}")
    if pruner not in studies.PRUNERS:
        raise InputError(f"--pruner {pruner}", f"unknown pruner; allowed: {', '.join(studies.PRUNERS)}")


def show(study: str, storage: str) -> TuneResult:
    """An existing study read back, as :func:`tune` returns it at the end (``rlcli tune --show``)."""
    opened = studies.open_storage(storage)
    the_study = studies.load_existing(study, opened)
    objective = the_study.user_attrs.get("objective", "return")
    result = TuneResult(study, storage, Path("."), objective, the_study.direction.name.lower())
    result.rows = studies.rows(the_study)
    best = studies.best_trial(the_study)
    result.best = next((r for r in result.rows if best is not None and r.number == best.number), None)
    result.importances = studies.importances(the_study)
    return result


def _read_back(result: TuneResult, study: Any, space: Space, preset: Path, set_: list) -> None:
    """The table, the best trial, the importances and ``best.toml``."""
    result.rows = studies.rows(study)
    best = studies.best_trial(study)
    if best is None:
        return
    result.best = next(r for r in result.rows if r.number == best.number)
    result.importances = studies.importances(study)
    params = {p.key: p for p in space.params}
    values = {key: params[key].value_of(v) if key in params else v for key, v in best.params.items()}
    cfg = load_config(preset, [*set_, *overrides(values, best.number)])
    lines = [
        f"# rlcli tune: the best trial ({best.number}) of study {result.study!r} ({result.storage}),",
        f"# objective {result.objective} = {best.value:g}; the preset {preset} with these values:",
    ]
    lines += [f"#   {key} = {v}" for key, v in best.params.items()]
    result.best_toml = result.folder / "best.toml"
    result.best_toml.write_text("\n".join(lines) + "\n\n" + to_toml(cfg), encoding="utf-8")


class _Pool:
    """The trials in progress, ``jobs`` at a time, and the signals received meanwhile."""

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
        self.running: list[_Running] = []
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
        budget = cfg.data.total_steps if cfg.offline else cfg.collector.total_frames
        running = _Running(trial, values, self.folder / f"trial-{trial.number:04d}", list(self.seeds), budget)
        running.folder.mkdir(parents=True, exist_ok=True)
        self.running.append(running)
        self.emit("start", running)
        self.start_seed(running)

    def start_seed(self, running: _Running) -> None:
        seed = running.seeds[running.index]
        spec_file = running.folder / f"seed-{seed}.trial.json"
        TrialSpec(
            self.report_every,
            str(running.folder / f"seed-{seed}.reports.jsonl"),
            str(running.folder / "prune"),
            os.getpid(),
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
            env={**os.environ, "COLUMNS": "200"},
        )
        running.started = time.perf_counter()

    def forward(self) -> None:
        """Pass each signal received on to every running trial once; a third one kills them."""
        for running in self.running:
            while running.signalled < len(self.signals) and running.proc.poll() is None:
                running.proc.send_signal(signal.SIGKILL if running.signalled >= 2 else self.signals[running.signalled])
                running.signalled += 1

    def heartbeat(self) -> None:
        now = time.monotonic()
        if now - self.last_beat > studies.HEARTBEAT_S / 2:
            studies.heartbeat(self.study, [running.trial for running in self.running])
            self.last_beat = now

    def poll(self, running: _Running) -> None:
        self.report(running)
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

    def report(self, running: _Running) -> None:
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
            running.trial.report(value if self.objective == "return" else -value, step)
            running.last_step = step
            if not running.pruning and running.trial.should_prune():
                running.pruning = True
                (running.folder / "prune").touch()

    def finish(self, running: _Running, state: Any) -> None:
        """Tell the study how the trial ended."""
        self.running.remove(running)
        trial = running.trial
        trial.set_user_attr("frames", sum(o.frames or 0 for o, _ in running.outcomes))
        trial.set_user_attr("seconds", round(sum(o.wall_s or 0.0 for o, _ in running.outcomes), 2))
        trial.set_user_attr("folder", str(running.folder))
        if state == self.optuna.trial.TrialState.COMPLETE:
            values = [_objective(info, self.objective) for _, info in running.outcomes]
            if all(v is not None and math.isfinite(v) for v in values):
                self.study.tell(trial, sum(values) / len(values))
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
    value = last_eval.get("return_mean", info.get("last_return"))
    return None if value is None else float(value)
