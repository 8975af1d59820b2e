"""``rlcli bench``: throughput suites shared by the command and ``benchmarks/``.

:func:`rlcli.bench.runner.run_bench` runs them; :mod:`rlcli.bench.suites` holds them.
"""

from collections.abc import Sequence

from rlcli.config.errors import InputError

# Torch-free facts that `rlcli bench` checks its arguments and baselines against before the
# suites (and torch) load; tests check them against the suites and the measurements.
SUITE_NAMES = (
    "env",
    "collector",
    "advantage",
    "loss",
    "update",
    "buffer",
    "offpolicy",
    "contrib",
    "distributed",
    "export",
    "train",
)
"""The suites of :mod:`rlcli.bench.suites`, in their order."""


class BenchStopped(BaseException):
    """A SIGINT or SIGTERM ended the bench: raised where the bench was when the signal came, so that
    it unwinds at once through every clean-up (envs, the partner process, the scratch folder). A
    BaseException: no ``except Exception`` on the way turns it into a failed case."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def check_suites(names: Sequence[str]) -> None:
    """Raise an InputError naming every unknown suite in ``names`` and the known ones."""
    unknown = [name for name in names if name not in SUITE_NAMES]
    if unknown:
        raise InputError(f"--suite {' '.join(unknown)}", f"unknown suite; known suites: {', '.join(SUITE_NAMES)}")


# Direction of each unit: True when a larger figure is better.
UNITS = {
    "frames/s": True,
    "steps/s": True,
    "elements/s": True,
    "calls/s": True,
    "updates/s": True,
    "gradient steps/s": True,
    "speedup": True,
    "slowdown": False,
    "ms": False,
    "s": False,
}
