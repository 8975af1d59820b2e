"""Replay for off-policy algorithms: storage (tensors or memmap files) and its sum-tree, the
:class:`Replay` fed from collected batches. The gradient steps every replay-based algorithm runs
through are :class:`rlcli.learning.off_policy.ReplayLearner`'s."""

from rlcli.replay.feed import (
    OffPolicyReplay,
    Replay,
    ReplaySettings,
    box_replay,
    build_replay,
    offline_replay,
    transition_spec,
)
from rlcli.replay.storage import ReplayBuffer, Spec, check_storage, storage_bytes
from rlcli.replay.sumtree import SumTree

__all__ = [
    "OffPolicyReplay",
    "Replay",
    "ReplayBuffer",
    "ReplaySettings",
    "Spec",
    "SumTree",
    "box_replay",
    "build_replay",
    "check_storage",
    "offline_replay",
    "storage_bytes",
    "transition_spec",
]
