"""``[logger]``: where a run's metric rows go, the files of its folder and the tracking servers."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from rlcli.config.model import SECTION

Backend = Literal["csv", "jsonl", "tensorboard", "wandb", "mlflow"]


def _default_backends() -> list[Backend]:
    return ["csv", "jsonl"]


class LoggerConfig(BaseModel):
    model_config = SECTION

    backends: list[Backend] = Field(
        # A named function, not a lambda: the type checker reads a lambda's list as list[str].
        default_factory=_default_backends,
        description='Where metrics go: "csv", "jsonl", "tensorboard", "wandb", "mlflow" (the last three need '
        "the extra of the same name).",
    )
    interval: int = Field(1, ge=1, description="Write metrics every this many iterations.")
    group: str | None = Field(None, description="The W&B group of the run (rlcli tune sets its study).")
    wandb_project: str = Field("rlcli", min_length=1, description="The W&B project.")
    wandb_entity: str | None = Field(None, description="The W&B entity (default: your default entity).")
    log_model: bool = Field(False, description="Upload final.pt to W&B as a model artifact (MLflow always keeps it).")
    mlflow_uri: str | None = Field(
        None, description="The MLflow tracking URI (default: MLFLOW_TRACKING_URI, else MLflow's local default)."
    )
    mlflow_experiment: str = Field("rlcli", min_length=1, description="The MLflow experiment.")
    mlflow_parent: str | None = Field(
        None, description="The MLflow run to nest this one under (rlcli tune sets its study's run)."
    )
