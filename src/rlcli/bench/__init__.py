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
    "onpolicy",
    "buffer",
    "offpolicy",
    "distributed",
    "export",
    "train",
)
"""The suites of :mod:`rlcli.bench.suites`, in their order."""

MOVED_SUITES: dict[str, dict[str, str]] = {
    # Issue 45: "contrib" grouped four algorithms by the day they arrived (sb3-contrib's part of
    # RL-Zoo's table); their figures now sit with their family's.
    "contrib": {
        "qrdqn": "offpolicy",
        "tqc": "offpolicy",
        "crossq": "offpolicy",
        "redq": "offpolicy",
        "trpo": "onpolicy",
    },
}
"""A suite that is no more: the suite each of its figures moved to, by the algorithm its name starts with
(``qrdqn.update`` -> ``offpolicy``). ``--suite`` names the new suites; ``--compare`` matches a baseline's
old figures to the new ones (:func:`moved_key`)."""


def moved_key(key: str) -> str:
    """A figure's key (``suite/name[params]``) as it reads now: one of a moved suite under its new suite."""
    suite, _, rest = key.partition("/")
    moved = MOVED_SUITES.get(suite, {}).get(rest.split(".", 1)[0])
    return f"{moved}/{rest}" if moved else key


class BenchStopped(BaseException):
    """A SIGINT or SIGTERM ended the bench: raised where the bench was when the signal came, so that
    it unwinds at once through every clean-up (envs, the partner process, the scratch folder). A
    BaseException: no ``except Exception`` on the way turns it into a failed case."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def check_suites(names: Sequence[str]) -> None:
    """Raise an InputError naming every unknown suite in ``names`` and the known ones, or, for a suite
    that moved, the suites that time its figures now."""
    for name in names:
        if name in MOVED_SUITES:
            now = sorted(set(MOVED_SUITES[name].values()), key=SUITE_NAMES.index)
            by_suite = "; ".join(
                f"{suite}: {', '.join(algo for algo, to in MOVED_SUITES[name].items() if to == suite)}" for suite in now
            )
            raise InputError(
                f"--suite {name}",
                f"no such suite any more: its figures moved to their families' suites ({by_suite}); "
                f"run {' '.join(f'--suite {suite}' for suite in now)}",
            )
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
    "share": True,
    "ms": False,
    "s": False,
}
