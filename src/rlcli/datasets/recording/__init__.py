"""Datasets made from trained runs (``rlcli collect``), each written as a Minari dataset that
:mod:`rlcli.datasets` reads back: a policy played on its env (:mod:`.policy`), a run's saved replay
buffer chained back into episodes (:mod:`.replay`); :mod:`.writing` puts either in place whole."""

from rlcli.datasets.recording.policy import record_policy, record_random
from rlcli.datasets.recording.replay import record_replay
from rlcli.datasets.recording.writing import Recorded

__all__ = ["Recorded", "record_policy", "record_random", "record_replay"]
