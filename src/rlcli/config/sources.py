"""The sections of a run's data source: ``[collector]`` (envs, online) and ``[data]`` (a dataset,
offline), each with the run's budget, and the check that the algorithm learns from the one given."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from rlcli.config.algos import OFFLINE
from rlcli.config.model import SECTION


class CollectorConfig(BaseModel):
    model_config = SECTION

    frames_per_batch: int = Field(2048, ge=1, description="Env steps (over all envs) per training iteration.")
    total_frames: int = Field(
        100_000,
        ge=1,
        description="Env steps of the whole run, at least one batch, rounded up to a whole "
        "number of batches (1000 at 512 frames per batch trains 1024).",
    )

    @property
    def iterations(self) -> int:
        """Training iterations of the run: ``total_frames`` rounded up to whole batches."""
        return -(-self.total_frames // self.frames_per_batch)

    @property
    def frames(self) -> int:
        """Env steps the run trains: ``iterations`` whole batches, at least ``total_frames``.
        Schedules, the banner and ``run.json`` count these."""
        return self.iterations * self.frames_per_batch


class DataConfig(BaseModel):
    model_config = SECTION

    dataset: str = Field(
        min_length=1,
        description="The dataset an offline algorithm learns from: a Minari dataset id (such as "
        "mujoco/halfcheetah/medium-v0), looked up where minari looks (MINARI_DATASETS_PATH, else "
        "~/.minari/datasets), or the path of a Minari dataset folder.",
    )
    total_steps: int = Field(
        1_000_000,
        ge=1,
        description="Gradient steps of the whole offline run, rounded up to whole iterations. An offline run "
        "counts its progress in gradient steps: checkpoint.every_steps and eval.every_steps schedule in "
        "them, and the progress column of metrics.csv (frames, online) counts them.",
    )
    steps_per_iteration: int = Field(
        1000,
        ge=1,
        le=1_000_000,
        description="Gradient steps per training iteration (one metrics row each).",
    )
    device: Literal["auto", "cpu"] = Field(
        "auto",
        description='Where the dataset\'s tensors live: "auto" on the training device (GPU memory when '
        'training on CUDA, where minibatches are drawn fastest), "cpu" in host memory.',
    )

    @property
    def iterations(self) -> int:
        """Training iterations of the run: ``total_steps`` rounded up to whole iterations."""
        return -(-self.total_steps // self.steps_per_iteration)

    @property
    def steps(self) -> int:
        """Gradient steps the run takes: ``iterations`` whole iterations, at least ``total_steps``."""
        return self.iterations * self.steps_per_iteration


def source_problems(algo: Any, data: Any, given: set[str] | frozenset[str]) -> list[tuple[str, str]]:
    """Whether the run's data source (``[data]``: a dataset; otherwise ``[collector]``: envs) is one the
    algorithm learns from (its config's ``CAPABILITIES.sources``), and that an offline run sets no ``[collector]``."""
    if algo is None:
        return []
    name, sources = algo.name, type(algo).CAPABILITIES.sources
    if data is None and "collector" not in sources:
        return [
            (
                "data",
                f"{name} learns from a dataset, not from envs: add a [data] section with "
                'dataset = "<minari id or path>" (and total_steps, the budget in gradient steps)',
            )
        ]
    if data is not None and "dataset" not in sources:
        return [
            (
                "data",
                f"{name} learns from envs, not from a dataset: remove [data] and set the budget in "
                f"[collector]; the algorithms that learn from a dataset: {', '.join(OFFLINE)}",
            )
        ]
    if data is not None and "collector" in given:
        return [
            (
                "collector",
                "an offline run (with [data]) collects no rollouts: remove [collector] and set "
                "the budget in [data] (total_steps, steps_per_iteration)",
            )
        ]
    return []
