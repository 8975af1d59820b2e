"""The ``rlcli bench`` suites as pytest-benchmark tests (not part of the default test run).

    pip install -e '.[bench]' && python -m pytest benchmarks/ --benchmark-only -n 0

The cases are the ones ``rlcli bench --quick`` times, built by the same suite
functions; pytest-benchmark does the timing and the statistics here. The train cases, which time
windows of a training run themselves, are left to ``rlcli bench``.
"""

import tempfile
from pathlib import Path

import pytest
import torch

from rlcli.bench.suites import SUITES
from rlcli.bench.suites.options import BenchOptions

torch.set_num_threads(1)
SCRATCH = tempfile.TemporaryDirectory(prefix="rlcli-bench-")
OPTIONS = BenchOptions(device=torch.device("cpu"), quick=True, compile=False, scratch=Path(SCRATCH.name))
CASES = [case for suite in SUITES.values() for case in suite(OPTIONS)[0] if case.run is not None]


CLOSED: set[str] = set()


@pytest.fixture(scope="session", autouse=True)
def close_cases():
    yield
    # The cases left out of this session (-k) still hold what their suite made up front.
    for case in CASES:
        if case.key not in CLOSED:
            case.close()
    SCRATCH.cleanup()


@pytest.mark.parametrize("case", CASES, ids=[case.key for case in CASES])
def test_throughput(benchmark, case):
    benchmark.extra_info.update(unit=case.unit, work_per_call=case.work)
    # As rlcli bench does: opened just before its timing, closed right after.
    try:
        case.open()
        benchmark(case.run)
    finally:
        CLOSED.add(case.key)
        case.close()
