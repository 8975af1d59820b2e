"""``rlcli bench``: throughput suites shared by the command and ``benchmarks/``.

:func:`rlcli.bench.runner.run_bench` runs them; :mod:`rlcli.bench.suites` holds them.
"""
