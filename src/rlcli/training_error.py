"""The error that stops training: defined apart from the trainer, so that the collector (below it) can
raise it too."""

from __future__ import annotations


class TrainingError(Exception):
    """Training cannot go on: a loss term or the weights became NaN or infinite, or an env allowed no
    action at all.

    ``rank``: the rank of a run of several that met the error alone (an env of its own); None when
    every rank met it together (a loss averaged over the ranks) or the run has one process. A rank
    alone leaves the group at once, since the others will not come to its next collective.
    """

    def __init__(self, iteration: int, term: str, value: float | str, *, rank: int | None = None):
        self.iteration, self.term, self.value, self.rank = iteration, term, value, rank
        where = f"iteration {iteration}" if rank is None else f"rank {rank}, iteration {iteration}"
        super().__init__(
            f"{where}: {term} is {value}; training stopped (final.pt holds the weights of the iteration before)"
        )
