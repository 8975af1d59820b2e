"""Several seeds of one preset, each in its own ``rlcli train`` process, J at a time, and the
table that compares them: per seed, then the median and interquartile range."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rlcli.config.errors import InputError
from rlcli.config.load import Override, load_config
from rlcli.config.presets import find_preset
from rlcli.envs import import_env_packages
from rlcli.files import write_atomic
from rlcli.runtime.child_runs import SeedRun, read_outcome, train_command
from rlcli.runtime.cores import share_for_jobs
from rlcli.runtime.interrupts import on_stop_signals

_SPEC = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
MAX_SEEDS = 1000

# Columns of the table and seeds.json that get a median and an interquartile range.
FIGURES = (
    "frames",
    "solved_frames",
    "solved_s",
    "solved_process_s",
    "last_return",
    "best_return",
    "final_eval",
    "train_s",
)


def parse_seeds(spec: str) -> list[int]:
    """The seeds of ``0,1,2``, ``0-4`` or ``0-2,7``, in order and without repeats.

    Raises:
        InputError: an empty, reversed or malformed spec.
    """
    what = f"--seeds {spec}"
    seeds: list[int] = []
    parts = spec.split(",")
    if not spec.strip():
        raise InputError(what, "no seeds given; write a list or range such as 0,1,2 or 0-4")
    for part in parts:
        found = _SPEC.match(part)
        if not found:
            raise InputError(
                what,
                f"{part.strip()!r} is not a seed or a range; write a list or range "
                "such as 0,1,2 or 0-4 (seeds are whole numbers >= 0)",
            )
        low, high = int(found.group(1)), int(found.group(2) if found.group(2) is not None else found.group(1))
        if high < low:
            raise InputError(what, f"the range {low}-{high} is reversed; write {high}-{low}")
        if high >= 2**31:
            raise InputError(what, f"seed {high} is too large; seeds are below 2^31 ({2**31})")
        # Counted before the list is built, so that 0-99999999999 fails at once.
        if len(seeds) + high - low + 1 > MAX_SEEDS:
            raise InputError(what, f"more than {MAX_SEEDS} seeds")
        seeds.extend(range(low, high + 1))
    return list(dict.fromkeys(seeds))


@dataclass
class SeedsResult:
    """Every seed of a multi-seed run, with the group folder that holds their run folders."""

    preset: str
    group: Path
    target: float | None
    jobs: int
    runs: list[SeedRun] = field(default_factory=list)
    interrupted: bool = False
    stop_signal: str | None = None
    """"SIGINT" or "SIGTERM" when a signal stopped the seeds."""

    @property
    def failed(self) -> list[SeedRun]:
        return [r for r in self.runs if r.status == "failed"]

    @property
    def solved(self) -> int:
        return sum(r.solved_frames is not None for r in self.runs)

    def summary(self) -> dict[str, dict[str, float | None]]:
        """Median, first and third quartile of each figure over the seeds that have it."""
        out: dict[str, dict[str, float | None]] = {}
        for name in FIGURES:
            values = sorted(v for r in self.runs if (v := getattr(r, name)) is not None and math.isfinite(v))
            if not values:
                out[name] = {"median": None, "q1": None, "q3": None, "n": 0}
                continue
            q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else (values[0],) * 3
            out[name] = {"median": statistics.median(values), "q1": q1, "q3": q3, "n": len(values)}
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "preset": self.preset,
            "group": str(self.group),
            "stop_at_return": self.target,
            "jobs": self.jobs,
            "interrupted": self.interrupted,
            "signal": self.stop_signal,
            "solved": self.solved,
            "seeds": [asdict(r) for r in self.runs],
            "summary": self.summary(),
        }


def default_jobs(seeds: int) -> int:
    """One process per core, never more than the seeds."""
    return max(1, min(seeds, os.cpu_count() or 1))


def train_seeds(
    preset: str | Path,
    seeds: Sequence[int],
    *,
    overrides: Sequence[str | Override] = (),
    jobs: int | None = None,
    env_packages: Sequence[str] = (),
    on_event: Callable[[str, SeedRun], None] | None = None,
) -> SeedsResult:
    """Train ``preset`` once per seed, each as its own ``rlcli train`` process, ``jobs`` at a time.

    The config (with ``overrides``) is validated here first, so a bad one fails before any
    process starts. Run folders go under ``<output_dir>/<name>-<timestamp>-seeds/``, one
    ``<name>-seed<N>-<timestamp>`` each, beside ``seed-<N>.log`` (the process's output) and
    ``seeds.json`` (written however the call ends). A seed that fails does not stop the
    others. A SIGINT (Ctrl-C) or SIGTERM received meanwhile (in the main thread) is passed
    on once to every running seed, which stops at the end of its iteration and marks its
    folder interrupted; seeds not yet started are left out. A second signal passes on
    again (the seeds stop at once); a third kills them.

    Raises:
        ConfigError: the config, with the overrides, is invalid.
        InputError: ``jobs`` below 1, no seeds, a run name too long for the seed suffix,
            or an ``env_packages`` module that cannot be imported.
    """
    if not seeds:
        raise InputError("--seeds", "no seeds given")
    if jobs is not None and jobs < 1:
        raise InputError(f"--jobs {jobs}", "must be at least 1")
    import_env_packages(env_packages)
    path = find_preset(preset)
    cfg = load_config(path, overrides)
    longest = f"{cfg.run.name}-seed{max(seeds)}"
    if len(longest) > 100:
        raise InputError(f"run.name {cfg.run.name!r}", f"too long for --seeds: {longest!r} is over 100 characters")
    jobs = min(jobs or default_jobs(len(seeds)), len(seeds))
    group = _group_folder(Path(cfg.run.output_dir), cfg.run.name)
    result = SeedsResult(str(preset), group, cfg.run.stop_at_return, jobs, [SeedRun(s) for s in seeds])
    pool = _SeedProcesses(train_command(path, overrides, env_packages), group, cfg.run.name, on_event)
    try:
        pool.run(result.runs, jobs)
    finally:
        if pool.signals:
            result.interrupted = True
            result.stop_signal = signal.Signals(pool.signals[0]).name
        write_atomic(group / "seeds.json", json.dumps(result.to_json(), indent=2) + "\n")
    return result


class _SeedProcesses:
    """The seeds' ``rlcli train`` processes, ``jobs`` at a time, and the stop signals received
    meanwhile, each passed on once to every running seed."""

    def __init__(self, command: list[str], group: Path, name: str, on_event: Callable[[str, SeedRun], None] | None):
        self.command, self.group, self.name, self.on_event = command, group, name, on_event
        self.running: dict[int, tuple[subprocess.Popen, SeedRun, float, Any]] = {}
        self.signals: list[int] = []
        self.signalled: dict[int, int] = {}

    def run(self, runs: list[SeedRun], jobs: int) -> None:
        """Start ``runs`` in order, ``jobs`` at a time, until all have ended or a signal came and
        the running ones have ended; the ones not started then are left out."""
        pending = list(runs)
        self.environment = {**os.environ, "COLUMNS": "200", **share_for_jobs(jobs)}
        # A signal is only noted here; the loop passes it on, so that one landing in the
        # middle of starting or reaping a seed cannot leave a seed unsignalled or half-recorded.
        with on_stop_signals(self.signals.append):
            while self.running or (pending and not self.signals):
                while pending and not self.signals and len(self.running) < jobs:
                    self.start(pending.pop(0))
                self.forward()
                self.reap()
                time.sleep(0.05)

    def notify(self, event: str, run: SeedRun) -> None:
        if self.on_event is not None:
            self.on_event(event, run)

    def start(self, run: SeedRun) -> None:
        log = self.group / f"seed-{run.seed}.log"
        handle = log.open("w", encoding="utf-8")
        command = [
            *self.command,
            "--seed",
            str(run.seed),
            "--out",
            str(self.group),
            "--set",
            f"run.name={json.dumps(f'{self.name}-seed{run.seed}')}",
        ]
        # Its own session: a Ctrl-C at the terminal reaches only this process, which passes
        # each signal on exactly once, so that each seed stops at the end of an iteration.
        proc = subprocess.Popen(
            command,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=self.environment,
        )
        run.status, run.log = "running", str(log)
        self.running[run.seed] = (proc, run, time.perf_counter(), handle)
        self.notify("start", run)

    def forward(self) -> None:
        """Pass every signal received so far on to each running seed that has not had it;
        a third one kills them."""
        for seed, (proc, *_rest) in self.running.items():
            while self.signalled.get(seed, 0) < len(self.signals) and proc.poll() is None:
                count = self.signalled.get(seed, 0)
                proc.send_signal(signal.SIGKILL if count >= 2 else self.signals[count])
                self.signalled[seed] = count + 1

    def reap(self) -> None:
        for seed, (proc, run, started, handle) in list(self.running.items()):
            code = proc.poll()
            if code is None:
                continue
            handle.close()
            del self.running[seed]
            read_outcome(run, self.group, self.name, code, time.perf_counter() - started)
            self.notify("end", run)


def _group_folder(output_dir: Path, name: str) -> Path:
    """A new ``<output_dir>/<name>-<timestamp>-seeds`` folder (``-2``, ``-3`` ... when taken)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    group = output_dir / f"{name}-{stamp}-seeds"
    suffix = 1
    while True:
        try:
            group.mkdir(parents=True)
            return group
        except FileExistsError:
            suffix += 1
            group = output_dir / f"{name}-{stamp}-seeds-{suffix}"
        except OSError as exc:
            raise InputError(
                f"seeds folder under {str(output_dir)!r}",
                f"cannot create it: {exc.strerror or exc}; choose another with --out DIR",
            ) from None
