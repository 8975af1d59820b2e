"""Run benchmark suites and gather their figures into one report."""

from __future__ import annotations

import os
import platform
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import torch

from rlcli.bench import BenchStopped, check_suites
from rlcli.bench.compare import FORMAT
from rlcli.bench.measure import Result, measure
from rlcli.bench.suites import SUITES
from rlcli.bench.suites.options import BenchOptions
from rlcli.runtime.devices import resolve_device
from rlcli.runtime.interrupts import on_stop_signals


def run_bench(
    suites: Sequence[str] = (),
    *,
    device: str = "auto",
    repeat: int = 5,
    threads: int | Literal["auto"] = 1,
    quick: bool = False,
    compile: bool = False,
    on_result: Callable[[Result], None] = lambda result: None,
) -> dict[str, Any]:
    """Run the named suites (all when empty) and return the report ``--json`` writes.

    ``threads`` is every preset's ``run.threads``: a number sets torch's intra-op threads for the whole
    process and every phase; "auto" times each phase on the threads auto chooses for it (the suites that
    build no run, on one).

    A SIGINT or SIGTERM raises :class:`BenchStopped` where the bench is, in the main thread: every
    case's envs and processes are closed and the scratch folder (``rlcli-bench-*`` in the temp dir:
    the train cases' run folders, stand-in datasets) is removed on the way out; a further signal
    during that clean-up is ignored.
    """
    check_suites(suites)
    stopping: list[int] = []

    def stop(signum: int) -> None:
        if not stopping:
            stopping.append(signum)
            raise BenchStopped(signum)

    with on_stop_signals(stop), tempfile.TemporaryDirectory(prefix="rlcli-bench-") as scratch:
        opts = BenchOptions(
            device=resolve_device(device), quick=quick, compile=compile, scratch=Path(scratch), threads=threads
        )
        results = _run_suites(suites or list(SUITES), opts, repeat, on_result)
    return {
        "format": FORMAT,
        "machine": machine_info(opts.device),
        "commit": git_commit(),
        "options": {
            "suites": list(suites or SUITES),
            "device": str(opts.device),
            "repeat": repeat,
            "threads": threads,
            "quick": quick,
            "compile": compile,
        },
        "results": [r.to_json() for r in results],
    }


def _run_suites(
    names: Sequence[str], opts: BenchOptions, repeat: int, on_result: Callable[[Result], None]
) -> list[Result]:
    min_seconds = 0.05 if opts.quick else 0.1
    results: list[Result] = []
    for name in names:
        # Each suite from the same start: a suite that built a run may have left torch on its threads.
        torch.set_num_threads(1 if opts.threads == "auto" else opts.threads)
        cases, ratios = SUITES[name](opts)
        measured: dict[str, Result] = {}
        reached = 0
        try:
            for case in cases:
                reached += 1
                # Opened just before its timing and closed right after: a stop finds at most this
                # case's envs or processes open (and those a suite made up front, closed below).
                try:
                    case.open()
                    result = measure(case, repeat=repeat, min_seconds=min_seconds, device=opts.device)
                finally:
                    case.close()
                measured[case.key] = result
                results.append(result)
                on_result(result)
        finally:
            for case in cases[reached:]:
                case.close()
        for ratio in ratios:
            derived = ratio.compute(measured)
            if derived is not None:
                results.append(derived)
                on_result(derived)
    return results


def machine_info(device: torch.device) -> dict[str, Any]:
    """CPU model, cores, torch version and threads, CUDA device name."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "device": str(device),
        "cuda_device": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
    }


def git_commit() -> str | None:
    """The commit of the working folder's git checkout, when there is one."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
