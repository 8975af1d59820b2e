"""What the builders that algorithms share read of a config, as protocols.

A builder shared by several algorithms (TD3's machinery for DDPG, SAC's for TQC, its agent for CQL,
DQN's for QR-DQN) takes one of these, never an untyped ``cfg``: each config satisfies it with its own
fields, and what one algorithm fixes where another has a field (DDPG's single critic, TQC's mean over
its critics) is passed beside it by the algorithm's module. The replay's own settings are
:class:`rlcli.replay.ReplaySettings`. Members are read-only properties, as the frozen config models'
fields are.
"""

from __future__ import annotations

from typing import Protocol

from rlcli.learning.exploration import NoiseType
from rlcli.replay import ReplaySettings


class DeterministicSettings(ReplaySettings, Protocol):
    """The fields of a config that TD3's machinery reads, TD3's and DDPG's alike (:class:`~rlcli.algos.td3.Twin` holds the rest)."""

    @property
    def tau(self) -> float: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def noise(self) -> NoiseType: ...
    @property
    def noise_scale(self) -> float: ...
    @property
    def ou_theta(self) -> float: ...


class EnsembleSettings(Protocol):
    """The fields of a config that :func:`~rlcli.algos.sac.squashed_agent` reads: SAC's, TQC's and CQL's alike."""

    @property
    def num_critics(self) -> int: ...
    @property
    def alpha(self) -> float: ...


class SquashedSettings(EnsembleSettings, ReplaySettings, Protocol):
    """The fields of a config that SAC's machinery reads, SAC's and TQC's alike (:class:`~rlcli.algos.sac.Critics`
    holds how it uses the critics)."""

    @property
    def tau(self) -> float: ...
    @property
    def target_update_interval(self) -> int: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def policy_delay(self) -> int: ...
    @property
    def autotune_alpha(self) -> bool: ...
    @property
    def target_entropy(self) -> float | None: ...
    @property
    def exploration_hold(self) -> int: ...
    @property
    def use_sde(self) -> bool: ...
    @property
    def sde_sample_freq(self) -> int: ...


class QSettings(ReplaySettings, Protocol):
    """The fields of a config that DQN's machinery reads, DQN's and QR-DQN's alike."""

    @property
    def tau(self) -> float: ...
    @property
    def target_update_interval(self) -> int: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def epsilon_start(self) -> float: ...
    @property
    def epsilon_end(self) -> float: ...
    @property
    def exploration_fraction(self) -> float: ...
