"""The error that stops training: defined apart from the trainer, so that the collector (below it) can
raise it too."""

from __future__ import annotations


class TrainingError(Exception):
    """Training cannot go on: a loss term or the weights became NaN or infinite, or an env allowed no
    action at all."""

    def __init__(self, iteration: int, term: str, value: float | str):
        self.iteration, self.term, self.value = iteration, term, value
        super().__init__(
            f"iteration {iteration}: {term} is {value}; training stopped "
            "(final.pt holds the weights of the iteration before)"
        )
