"""``rlcli bench``: throughput suites shared by the command and ``benchmarks/``.

:func:`rlcli.bench.runner.run_bench` runs them; :mod:`rlcli.bench.suites` holds them.
"""

# Torch-free facts that `rlcli bench` checks its arguments and baselines against before the
# suites (and torch) load; tests check them against the suites and the measurements.
SUITE_NAMES = ("env", "collector", "advantage", "loss", "update", "buffer", "offpolicy", "train")
"""The suites of :mod:`rlcli.bench.suites`, in their order."""

# Direction of each unit: True when a larger figure is better.
UNITS = {
    "frames/s": True,
    "steps/s": True,
    "elements/s": True,
    "calls/s": True,
    "updates/s": True,
    "speedup": True,
    "slowdown": False,
    "ms": False,
    "s": False,
}
