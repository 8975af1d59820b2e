"""The data source of an offline run, in the loop's place of the collector."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.datasets.dataset import Dataset
    from rlcli.sources import Episodes
    from rlcli.timing import Timer


class DatasetSource:
    """The data source of an offline run: no envs, progress counted in gradient steps.

    An offline algorithm samples its minibatches from the dataset itself (the dataset is its replay),
    so what :meth:`next_batch` hands to its ``learn`` carries no transitions: a batch of no keys whose
    ``steps_per_iteration`` rows are the gradient steps the iteration owes, as an online batch's rows
    are the frames that pay for its replay's gradient steps. The return column reads
    ``episode_stats``: the in-training evaluation's episodes.
    """

    unit = "gradient steps"

    def __init__(self, dataset: Dataset, *, steps_per_iteration: int, episode_stats: Episodes):
        from tensordict import TensorDict

        self.dataset = dataset
        self.per_iteration = steps_per_iteration
        self.progress = 0
        self.observation_space, self.action_space = dataset.observation_space, dataset.action_space
        self.episode_stats = episode_stats
        self.steps = TensorDict({}, batch_size=[steps_per_iteration])

    def next_batch(self, timer: Timer) -> TensorDict:
        """The iteration's gradient steps: ``steps_per_iteration`` rows, no keys."""
        self.progress += self.per_iteration
        return self.steps

    def row_terms(self) -> dict[str, float]:
        """None: the evaluation's episodes are the base columns'."""
        return {}

    def state_dict(self) -> dict:
        return {"gradient_steps": self.progress, "episodes": int(self.episode_stats.episode_count)}

    def load_state_dict(self, state: dict) -> bool:
        # Checkpoints written before issue 45 name the gradient steps "frames": old run folders still resume.
        self.progress = state["gradient_steps"] if "gradient_steps" in state else state["frames"]
        self.episode_stats.episode_count = state["episodes"]
        return True

    def close(self) -> None:
        """Nothing to close: the evaluation's envs belong to the run's evaluator."""
