"""Timing one benchmark case: warm-up, calibrated repetitions, median and spread."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from rlcli.bench import UNITS

CASE_BUDGET_S = 2.0
"""Seconds of timed repetitions a case gets at most, unless that leaves fewer than ``MIN_REPEATS``."""
MIN_REPEATS = 3


@dataclass
class Case:
    """Something to time: ``run()`` does ``work`` units of work (frames, elements, calls).

    The bench calls ``open()`` just before it times the case and ``close()`` once it is done (or
    stopped): a case that holds envs or processes makes them in ``open``, so that only the case
    being timed holds any. A case that times itself (a whole training run, timed past its warm-up)
    gives ``timed`` instead of ``run``: ``timed(repeat, min_seconds)`` returns up to ``repeat``
    rates, each over at least ``min_seconds``.
    """

    suite: str
    name: str
    params: dict[str, Any]
    unit: str
    work: float
    run: Callable[[], Any] | None
    close: Callable[[], None] = lambda: None
    timed: Callable[[int, float], list[float]] | None = None
    open: Callable[[], None] = lambda: None

    @property
    def key(self) -> str:
        args = ",".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.suite}/{self.name}[{args}]"


@dataclass
class Result:
    """The median rate of a case over its repetitions, with the slowest and fastest one."""

    suite: str
    name: str
    params: dict[str, Any]
    key: str
    unit: str
    median: float
    min: float
    max: float
    repeats: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def higher_is_better(self) -> bool:
        return UNITS.get(self.unit, True)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "higher_is_better": self.higher_is_better}


def measure(case: Case, *, repeat: int, min_seconds: float, device: torch.device) -> Result:
    """Time ``case`` after one warm-up call: ``repeat`` repetitions, each calling it
    enough times to last ``min_seconds``; the figure is work per second per repetition.
    """
    if case.timed is not None:
        rates = case.timed(repeat, min_seconds)
        if not rates:
            raise RuntimeError(f"{case.key}: no rate measured")
        return _result(case, rates)
    # A case gives ``run`` unless it times itself (``timed``, handled above).
    assert case.run is not None, f"{case.key}: neither run nor timed"

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    # The warm-up call also sizes the repetitions (its first-call costs only make them shorter).
    start = time.perf_counter()
    case.run()
    sync()
    once = max(time.perf_counter() - start, 1e-7)
    calls = max(1, int(min_seconds / once))
    # A case whose one call takes seconds (a PPO update on Atari frames) gets fewer repetitions, never
    # below MIN_REPEATS: the bench of every suite stays within minutes.
    repeat = min(repeat, max(MIN_REPEATS, int(CASE_BUDGET_S / (once * calls))))
    rates = []
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        for _ in range(calls):
            case.run()
        sync()
        rates.append(case.work * calls / (time.perf_counter() - start))
    return _result(case, rates)


def _result(case: Case, rates: list[float]) -> Result:
    """``case``'s figure from the rate of each repetition: their median, with their range."""
    return Result(
        case.suite,
        case.name,
        dict(case.params),
        case.key,
        case.unit,
        statistics.median(rates),
        min(rates),
        max(rates),
        len(rates),
    )


@dataclass(frozen=True)
class Ratio:
    """A figure derived from two cases of the same run: ``numerator / denominator`` of their medians."""

    suite: str
    name: str
    params: dict[str, Any]
    unit: str
    numerator: str
    denominator: str

    def compute(self, results: dict[str, Result]) -> Result | None:
        top, bottom = results.get(self.numerator), results.get(self.denominator)
        if top is None or bottom is None:
            return None
        key = Case(self.suite, self.name, self.params, self.unit, 1, lambda: None).key
        value = top.median / bottom.median
        return Result(
            self.suite,
            self.name,
            dict(self.params),
            key,
            self.unit,
            value,
            value,
            value,
            top.repeats,
            extra={"of": [self.numerator, self.denominator]},
        )
