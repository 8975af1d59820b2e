"""Replay for off-policy algorithms: storage (tensors or memmap files) and its sum-tree, the
:class:`Replay` fed from collected batches, and the :class:`ReplayLearner` every replay-based
algorithm runs its gradient steps through."""

from rlcli.replay.feed import Replay, build_replay, offline_replay, transition_spec
from rlcli.replay.learner import REPLAY_METRICS, REPLAY_PHASES, UNPRIORITIZED_PHASES, ReplayLearner, total_loss
from rlcli.replay.storage import ReplayBuffer, Spec, check_storage, storage_bytes
from rlcli.replay.sumtree import SumTree

__all__ = [
    "REPLAY_METRICS",
    "REPLAY_PHASES",
    "Replay",
    "ReplayBuffer",
    "ReplayLearner",
    "Spec",
    "SumTree",
    "UNPRIORITIZED_PHASES",
    "build_replay",
    "check_storage",
    "offline_replay",
    "storage_bytes",
    "total_loss",
    "transition_spec",
]
