"""Per-phase wall-clock timing of the training loop."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch


def since_process_start() -> float | None:
    """Seconds since this process started (Linux, from /proc; 10 ms resolution), else None."""
    try:
        with open("/proc/self/stat", encoding="ascii") as handle:
            # Field 22 (starttime, in clock ticks after boot) is the 20th after the ")" closing the name.
            start_ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as handle:
            uptime = float(handle.read().split()[0])
        return max(uptime - start_ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def compile_clock() -> float:
    """Seconds torch.compile has spent compiling in this process so far (dynamo's own record)."""
    from torch._dynamo.utils import compilation_time_metrics

    # A graph's forward is compiled at its first call, its backward at its first backward pass.
    return float(
        sum(sum(compilation_time_metrics.get(key, ())) for key in ("_compile.compile_inner", "backward._backward_impl"))
    )


class Timer:
    """Accumulates seconds per named phase, per iteration and over the run.

    Phases nest by name only (``update.backward`` is part of ``update``). On
    CUDA, each phase edge synchronizes the device so that queued kernels are
    charged to the phase that launched them.

    ``clock`` returns seconds; ``time.perf_counter`` unless a test gives a fake one.
    """

    def __init__(self, device: torch.device, *, compiled: bool = False, clock: Callable[[], float] = time.perf_counter):
        self.device = device
        self.clock = clock
        self.sync = device.type == "cuda"
        self.current: dict[str, float] = {}
        self.totals: dict[str, float] = {}
        self.iterations = 0
        # With torch.compile, the seconds spent compiling are kept apart from the phases they
        # happened in, so that the first iterations show what running costs.
        self.compiled = compiled
        self._compile_start = compile_clock() if compiled else 0.0

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if self.sync:
            torch.cuda.synchronize(self.device)
        start = self.clock()
        compiling = compile_clock() if self.compiled else 0.0
        try:
            yield
        finally:
            if self.sync:
                torch.cuda.synchronize(self.device)
            elapsed = self.clock() - start
            if self.compiled:
                elapsed -= compile_clock() - compiling
            self.current[name] = self.current.get(name, 0.0) + max(elapsed, 0.0)

    @property
    def compile_seconds(self) -> float:
        """Seconds torch.compile has spent since this timer started (0 when not compiling)."""
        return compile_clock() - self._compile_start if self.compiled else 0.0

    def end_iteration(self) -> dict[str, float]:
        """Close the iteration: return its seconds per phase and fold them into the totals."""
        done = self.current
        for name, seconds in done.items():
            self.totals[name] = self.totals.get(name, 0.0) + seconds
        self.iterations += 1
        self.current = {}
        return done

    def mean(self, name: str) -> float:
        """Mean seconds per iteration of ``name`` over the closed iterations."""
        return self.totals.get(name, 0.0) / max(self.iterations, 1)

    def breakdown(self, phases: tuple[str, ...]) -> dict[str, dict[str, float]]:
        """Each of ``phases`` over the closed iterations: mean ms per iteration, total seconds
        and share of the ``iteration`` phase (a sub-phase's share is of the whole iteration too)."""
        whole = self.totals.get("iteration", 0.0) or 1e-12
        return {
            phase: {
                "mean_ms": round(self.mean(phase) * 1e3, 4),
                "total_s": round(self.totals[phase], 4),
                "share": round(self.totals[phase] / whole, 4),
            }
            for phase in phases
            if phase in self.totals
        }
