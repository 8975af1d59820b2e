"""What feeds the training loop: the protocol that the collector (envs, online) and the dataset source
(offline) both satisfy, so that the loop stays collect -> learn -> check -> log for either."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Protocol

from gymnasium import spaces

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.timing import Timer


class Episodes(Protocol):
    """Finished episodes as gymnasium's ``RecordEpisodeStatistics`` counts them: how many so far,
    and the returns and lengths of the newest (``return_queue.maxlen`` of them)."""

    episode_count: int
    return_queue: deque
    length_queue: deque


class Source(Protocol):
    """Where a run's batches come from: the :class:`~rlcli.collectors.stepper.Collector` (envs, online) or a
    :class:`~rlcli.datasets.DatasetSource` (a dataset, offline). The loop asks it for the next batch,
    hands the batch to the algorithm's ``learn`` and counts its progress; checkpoints save its state.
    """

    # Read-only where the loop only reads (properties of the collector); ``progress`` is restored on resume.
    @property
    def unit(self) -> str:
        """What ``progress`` counts, for people: "frames" (env steps) or "gradient steps"."""
        ...

    @property
    def per_iteration(self) -> int:
        """Progress one iteration of this rank makes."""
        ...

    progress: int
    """Progress so far (every rank's): env steps online, gradient steps offline."""

    @property
    def observation_space(self) -> spaces.Space: ...

    @property
    def action_space(self) -> spaces.Space: ...

    @property
    def episode_stats(self) -> Episodes:
        """The finished episodes the return column reads: the training envs' online, the evaluation's offline."""
        ...

    def next_batch(self, timer: Timer) -> TensorDict:
        """What the algorithm's ``learn`` takes this iteration: ``[T, N]`` transitions online; offline,
        one row of no keys per gradient step the iteration owes (the algorithm samples its dataset)."""
        ...

    def row_terms(self) -> dict[str, float]:
        """Columns of its own for the iteration's row (a team's return per group), named in ``Run.metrics``;
        empty for most sources."""
        ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> bool:
        """Continue from :meth:`state_dict`; returns whether it continues exactly."""
        ...

    def close(self) -> None: ...
