"""The seeds of a ``--seeds`` spec and how a seed's process ended; the processes themselves are run
through the real command in tests/cli/test_seeds.py."""

import tracemalloc

import pytest

from rlcli.config.errors import InputError
from rlcli.runtime.child_runs import _killed_by
from rlcli.runtime.seed_runs import parse_seeds


@pytest.mark.parametrize(
    ("spec", "seeds"),
    [("0,1,2", [0, 1, 2]), ("0-4", [0, 1, 2, 3, 4]), ("3-5,0", [3, 4, 5, 0]), (" 7 ", [7]), ("1,1-2", [1, 2])],
)
def test_seed_specs(spec, seeds):
    assert parse_seeds(spec) == seeds


@pytest.mark.parametrize("spec", ["", " ", "4-1", "a", "1,,2", "-1", "1-", "0-2000"])
def test_bad_seed_specs(spec):
    with pytest.raises(InputError):
        parse_seeds(spec)


def test_a_huge_range_is_refused_before_its_seeds_are_listed():
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="more than 1000 seeds"):
            parse_seeds("0-2000000000")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Two billion seeds listed first would take gigabytes.
    assert peak < 1_000_000
    with pytest.raises(InputError, match="too large"):
        parse_seeds(f"{2**31}")


def test_a_seed_killed_by_a_signal_says_so():
    assert _killed_by(-9) == "killed by SIGKILL" and _killed_by(1) is None
