"""The Timer on a fake clock: exact seconds per phase, nesting by name, means over closed
iterations, the breakdown's shares, compile time kept apart, and CUDA synchronisation at
every phase edge. No sleeps: the clock only moves when a test moves it."""

import time

import pytest
import torch

from rlcli import timing
from rlcli.timing import Timer

CPU = torch.device("cpu")


def test_the_default_clock_is_perf_counter():
    assert Timer(CPU).clock is time.perf_counter


def test_a_phase_is_charged_the_seconds_between_its_edges_and_nothing_outside(clock):
    timer = Timer(CPU, clock=clock)
    clock.advance(8.0)
    with timer.phase("collect"):
        clock.advance(0.25)
    clock.advance(4.0)
    assert timer.current == {"collect": 0.25}
    assert clock.reads == 2


def test_phases_accumulate_per_iteration_and_fold_into_the_totals(clock):
    timer = Timer(CPU, clock=clock)
    per_iteration = [(0.25, 0.5, 0.125), (1.0, 0.5, 0.0)]
    for first, second, update in per_iteration:
        with timer.phase("collect"):
            clock.advance(first)
        with timer.phase("collect"):
            clock.advance(second)
        with timer.phase("update"):
            clock.advance(update)
        done = timer.end_iteration()
        assert done == {"collect": first + second, "update": update}
        assert timer.current == {}
    assert timer.iterations == 2
    assert timer.totals == {"collect": 0.25 + 0.5 + 1.0 + 0.5, "update": 0.125}


def test_a_closed_iteration_is_not_changed_by_the_next_one(clock):
    timer = Timer(CPU, clock=clock)
    with timer.phase("collect"):
        clock.advance(0.5)
    done = timer.end_iteration()
    with timer.phase("collect"):
        clock.advance(2.0)
    assert done == {"collect": 0.5}
    assert timer.current == {"collect": 2.0} and timer.totals == {"collect": 0.5}


def test_sub_phases_nest_by_name_and_count_in_their_parent(clock):
    timer = Timer(CPU, clock=clock)
    with timer.phase("update"):
        clock.advance(0.25)
        with timer.phase("update.backward"):
            clock.advance(0.5)
        clock.advance(0.125)
        with timer.phase("update.backward"):
            clock.advance(0.0625)
    assert timer.current == {"update.backward": 0.5625, "update": 0.25 + 0.5 + 0.125 + 0.0625}


def test_mean_is_over_closed_iterations_only(clock):
    timer = Timer(CPU, clock=clock)
    # Before any iteration closes, nothing is divided by zero.
    assert timer.mean("collect") == 0.0
    for seconds in (0.5, 0.25, 1.5):
        with timer.phase("collect"):
            clock.advance(seconds)
        timer.end_iteration()
    # The open iteration's seconds wait for end_iteration.
    with timer.phase("collect"):
        clock.advance(64.0)
    assert timer.mean("collect") == (0.5 + 0.25 + 1.5) / 3
    assert timer.mean("never") == 0.0


def test_a_phase_missing_from_some_iterations_is_averaged_over_all_of_them(clock):
    timer = Timer(CPU, clock=clock)
    for evaluate in (True, False, False, False):
        if evaluate:
            with timer.phase("eval"):
                clock.advance(2.0)
        timer.end_iteration()
    assert timer.mean("eval") == 0.5


def test_breakdown_gives_mean_ms_total_and_share_of_the_whole_iteration(clock):
    timer = Timer(CPU, clock=clock)
    for collect, backward, rest in ((0.25, 0.125, 0.375), (0.5, 0.25, 0.0)):
        with timer.phase("iteration"):
            with timer.phase("collect"):
                clock.advance(collect)
            with timer.phase("update"):
                with timer.phase("update.backward"):
                    clock.advance(backward)
            clock.advance(rest)
        timer.end_iteration()
    # iteration: 0.75 + 0.75; collect: 0.75; update and update.backward: 0.375.
    breakdown = timer.breakdown(("collect", "update", "update.backward", "eval", "iteration"))
    assert breakdown == {
        "collect": {"mean_ms": 375.0, "total_s": 0.75, "share": 0.5},
        "update": {"mean_ms": 187.5, "total_s": 0.375, "share": 0.25},
        # A sub-phase's share is of the whole iteration, not of its parent.
        "update.backward": {"mean_ms": 187.5, "total_s": 0.375, "share": 0.25},
        "iteration": {"mean_ms": 750.0, "total_s": 1.5, "share": 1.0},
    }
    # A phase that never ran has no entry, and the order is the one asked for.
    assert list(breakdown) == ["collect", "update", "update.backward", "iteration"]


def test_breakdown_rounds_to_four_decimals(clock):
    timer = Timer(CPU, clock=clock)
    with timer.phase("iteration"):
        with timer.phase("collect"):
            clock.advance(1.0)
        clock.advance(2.0)
    timer.end_iteration()
    with timer.phase("iteration"):
        clock.advance(0.0001220703125)  # 2**-13
    timer.end_iteration()
    breakdown = timer.breakdown(("collect", "iteration"))
    whole = 3.0 + 2**-13
    assert breakdown["collect"]["share"] == round(1.0 / whole, 4) == 0.3333
    assert breakdown["iteration"]["total_s"] == round(whole, 4) == 3.0001
    assert breakdown["iteration"]["mean_ms"] == round(whole / 2 * 1e3, 4) == 1500.061


def test_a_phase_that_raises_is_still_timed(clock):
    timer = Timer(CPU, clock=clock)
    with pytest.raises(ValueError):
        with timer.phase("update"):
            clock.advance(0.25)
            raise ValueError
    assert timer.current == {"update": 0.25}


def test_a_clock_that_steps_back_charges_nothing_rather_than_negative_seconds(clock):
    timer = Timer(CPU, clock=clock)
    with timer.phase("collect"):
        clock.advance(-1.0)
    assert timer.current == {"collect": 0.0}


class FakeCompileClock:
    def __init__(self):
        self.seconds = 0.0

    def __call__(self) -> float:
        return self.seconds


def test_compile_seconds_are_taken_out_of_the_phase_they_happen_in(clock, monkeypatch):
    compiling = FakeCompileClock()
    compiling.seconds = 3.0  # compiled before this timer started: not its own
    monkeypatch.setattr(timing, "compile_clock", compiling)
    timer = Timer(CPU, compiled=True, clock=clock)
    with timer.phase("update"):
        clock.advance(2.5)
        compiling.seconds += 2.0
    with timer.phase("collect"):
        clock.advance(0.25)
    assert timer.current == {"update": 0.5, "collect": 0.25}
    assert timer.compile_seconds == 2.0


def test_without_compile_the_compile_clock_is_never_read(clock, monkeypatch):
    def unread() -> float:
        raise AssertionError("compile_clock read by a timer that does not compile")

    monkeypatch.setattr(timing, "compile_clock", unread)
    timer = Timer(CPU, clock=clock)
    with timer.phase("update"):
        clock.advance(0.5)
    assert timer.current == {"update": 0.5} and timer.compile_seconds == 0.0


def test_cuda_synchronizes_before_each_clock_read_at_both_edges(monkeypatch):
    events = []
    synced = []

    def synchronize(device=None):
        events.append("sync")
        synced.append(device)

    def logging_clock() -> float:
        events.append("clock")
        return float(len(events))

    # A cuda device object needs no GPU; only synchronize would, and it is replaced.
    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
    cuda = torch.device("cuda", 0)
    timer = Timer(cuda, clock=logging_clock)
    with timer.phase("update"):
        events.append("body")
    assert events == ["sync", "clock", "body", "sync", "clock"]
    assert synced == [cuda, cuda]
    # Clock reads 2 and 5: the edges' synchronisations are inside the phase's span.
    assert timer.current == {"update": 3.0}


def test_cpu_never_synchronizes(clock, monkeypatch):
    def synchronize(device=None):
        raise AssertionError("synchronize called for a CPU timer")

    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
    timer = Timer(CPU, clock=clock)
    with timer.phase("collect"):
        clock.advance(0.5)
    assert timer.current == {"collect": 0.5}
