import pytest
import torch

from rlcli.bench import BenchStopped, runner
from rlcli.bench.measure import Case
from rlcli.bench.suites import SUITES
from rlcli.bench.suites.options import BenchOptions


@pytest.fixture
def quick(tmp_path):
    return BenchOptions(device=torch.device("cpu"), quick=True, compile=False, scratch=tmp_path)


def _cases(events: list, count: int, stop_in: int | None = None) -> list[Case]:
    def run(n: int) -> None:
        if n == stop_in:
            raise BenchStopped(2)

    return [
        Case(
            "unit",
            f"case{n}",
            {},
            "calls/s",
            1,
            lambda n=n: run(n),
            lambda n=n: events.append(("close", n)),
            open=lambda n=n: events.append(("open", n)),
        )
        for n in range(count)
    ]


def test_each_case_is_opened_just_before_its_timing_and_closed_right_after(quick, monkeypatch):
    events = []
    monkeypatch.setitem(runner.SUITES, "env", lambda opts: (_cases(events, 3), []))
    results = runner._run_suites(["env"], quick, 1, lambda result: None)
    assert [r.name for r in results] == ["case0", "case1", "case2"]
    assert events == [("open", 0), ("close", 0), ("open", 1), ("close", 1), ("open", 2), ("close", 2)]


def test_a_stop_closes_the_case_it_cut_short_and_every_later_one_once(quick, monkeypatch):
    events = []
    monkeypatch.setitem(runner.SUITES, "env", lambda opts: (_cases(events, 4, stop_in=1), []))
    with pytest.raises(BenchStopped):
        runner._run_suites(["env"], quick, 1, lambda result: None)
    # The later cases were never opened: closed all the same, for what their suite made up front.
    assert events == [("open", 0), ("close", 0), ("open", 1), ("close", 1), ("close", 2), ("close", 3)]


def test_an_env_case_holds_its_envs_only_between_open_and_close(quick):
    cases, _ = SUITES["env"](quick)
    assert cases and all(case.run.__self__.envs is None for case in cases)
    case = cases[0]
    try:
        case.open()
        assert case.run.__self__.envs is not None
        case.run()
    finally:
        case.close()
    assert case.run.__self__.envs is None
