"""The bench's suites, one module per family, and :data:`SUITES`, the table ``rlcli bench`` runs
them from. Each suite is a function of the bench's options (:mod:`rlcli.bench.suites.options`)
that returns its cases and the ratios between them."""

from __future__ import annotations

from collections.abc import Callable

from rlcli.bench.suites import components, distributed, export, learning, offpolicy, onpolicy, training
from rlcli.bench.suites.options import BenchOptions, SuiteOutput

SUITES: dict[str, Callable[[BenchOptions], SuiteOutput]] = {
    "env": components.env_suite,
    "collector": components.collector_suite,
    "advantage": components.advantage_suite,
    "loss": learning.loss_suite,
    "update": learning.update_suite,
    "onpolicy": onpolicy.onpolicy_suite,
    "buffer": offpolicy.buffer_suite,
    "offpolicy": offpolicy.offpolicy_suite,
    "distributed": distributed.distributed_suite,
    "export": export.export_suite,
    "train": training.train_suite,
}
"""Every suite by name, in the order ``rlcli bench`` runs them (:data:`rlcli.bench.SUITE_NAMES`)."""
