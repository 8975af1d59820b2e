"""Tracking servers as metric backends: Weights & Biases (``wandb``) and MLflow (``mlflow``), each an
extra that only this module imports, and only when a run names it in ``logger.backends``.

Each receives the run's resolved config, every metric row (stepped by frames) and, once the run folder
is complete, ``run.json`` (W&B: the run summary; MLflow: an artifact, with ``config.toml`` and
``final.pt``). The local files are the record: a server that fails or goes away costs a warning and the
rest of what would have gone to it, never the run.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

from rlcli.console import err_console

Row = dict[str, float]

EXTRAS = {"wandb": "wandb", "mlflow": "mlflow"}
"""backend -> the extra (and package) that installs it."""


def flat(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested config as dotted keys (``algo.gamma``), lists and tables kept as values."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _finite(row: Row) -> dict[str, float]:
    return {k: float(v) for k, v in row.items() if k != "frames" and isinstance(v, (int, float)) and math.isfinite(v)}


def _run_info(run_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


class _Guarded:
    """Calls to a tracking server: the first failure is a warning, and nothing more is sent."""

    name = "tracking"

    def __init__(self) -> None:
        self.broken = False

    def guard(self, what: str, call, *args, **kwargs) -> Any:
        if self.broken:
            return None
        try:
            return call(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - whatever a client raises when its server is gone
            self.broken = True
            first = (str(exc).splitlines() or [""])[0][:200]
            err_console.print(
                f"[yellow]warning:[/] the {self.name} backend stopped at {what} "
                f"({type(exc).__name__}: {first}); the run goes on, its local files are complete"
            )
            return None


class WandbLogger(_Guarded):
    """A W&B run named after the run folder (resumed with it), in ``logger.wandb_project``, grouped by
    ``logger.group``; ``WANDB_MODE=offline`` keeps it in ``RUN_DIR/wandb`` with no account."""

    name = "wandb"

    def __init__(self, run_dir: Path, settings, config: dict[str, Any], resume_after: int | None):
        super().__init__()
        import wandb

        self.run_dir, self.settings = run_dir, settings
        self.run = self.guard(
            "init",
            wandb.init,
            project=settings.wandb_project,
            entity=settings.wandb_entity,
            group=settings.group,
            name=run_dir.name,
            id=_run_id(run_dir),
            resume="allow",
            dir=str(run_dir),
            config=config,
            reinit="create_new",
        )
        self.wandb = wandb

    def write(self, row: Row) -> None:
        if self.run is not None:
            self.guard("a row", self.run.log, _finite(row), step=int(row["frames"]))

    def flush(self) -> None:
        """W&B sends in the background."""

    def close(self) -> None:
        if self.run is None:
            return
        info = _run_info(self.run_dir)
        self.guard("run.json", self.run.summary.update, {k: v for k, v in info.items() if not isinstance(v, dict)})
        final = self.run_dir / "final.pt"
        if self.settings.log_model and final.is_file():

            def upload() -> None:
                artifact = self.wandb.Artifact(f"{self.run_dir.name}-model", type="model")
                artifact.add_file(str(final))
                self.run.log_artifact(artifact)

            self.guard("final.pt", upload)
        code = 0 if info.get("status") in ("completed", "solved", "pruned") else 1
        self.guard("finish", self.run.finish, exit_code=code)


def _run_id(run_dir: Path) -> str:
    """A W&B run id that a resume of the same folder finds again."""
    import hashlib

    return hashlib.sha1(str(run_dir.resolve()).encode()).hexdigest()[:16]


class MLflowLogger(_Guarded):
    """An MLflow run in ``logger.mlflow_experiment`` at ``logger.mlflow_uri`` (else ``MLFLOW_TRACKING_URI``,
    else MLflow's local default), nested under ``logger.mlflow_parent`` (``rlcli tune``'s study run).
    Params are the resolved config's dotted keys; metrics go in the background, ``step`` = frames."""

    name = "mlflow"
    ID_FILE = "mlflow-run-id"

    def __init__(self, run_dir: Path, settings, config: dict[str, Any], resume_after: int | None):
        super().__init__()
        # A server that is gone fails a call in seconds instead of retrying for minutes.
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
        from mlflow import MlflowClient

        self.run_dir = run_dir
        self.client = MlflowClient(tracking_uri=settings.mlflow_uri)
        self.run_id = self.guard("start", self._start, settings, config, resume_after)

    def _start(self, settings, config: dict[str, Any], resume_after: int | None) -> str:
        from mlflow.entities import Param

        saved = self.run_dir / self.ID_FILE
        if resume_after is not None and saved.is_file():
            run_id = saved.read_text(encoding="utf-8").strip()
            self.client.update_run(run_id, status="RUNNING")
            return run_id
        experiment = experiment_id(self.client, settings.mlflow_experiment)
        tags = {"rlcli.run_dir": str(self.run_dir)}
        if settings.mlflow_parent:
            tags["mlflow.parentRunId"] = settings.mlflow_parent
        run_id = self.client.create_run(experiment, run_name=self.run_dir.name, tags=tags).info.run_id
        saved.write_text(run_id + "\n", encoding="utf-8")
        params = [
            Param(key, json.dumps(value) if not isinstance(value, str) else value)
            for key, value in flat(config).items()
        ]
        for start in range(0, len(params), 100):
            self.client.log_batch(run_id, params=params[start : start + 100])
        return run_id

    def write(self, row: Row) -> None:
        if self.run_id is None:
            return
        from mlflow.entities import Metric

        now, step = int(time.time() * 1000), int(row["frames"])
        metrics = [Metric(key, value, now, step) for key, value in _finite(row).items()]
        self.guard("a row", self.client.log_batch, self.run_id, metrics=metrics, synchronous=False)

    def flush(self) -> None:
        """MLflow sends rows in the background; :meth:`close` waits for them."""

    def close(self) -> None:
        if self.run_id is None:
            return
        import mlflow

        self.guard("the last rows", mlflow.flush_async_logging)
        for name in ("run.json", "config.toml", "final.pt"):
            if (self.run_dir / name).is_file():
                self.guard(name, self.client.log_artifact, self.run_id, str(self.run_dir / name))
        status = _run_info(self.run_dir).get("status")
        self.guard(
            "the end",
            self.client.set_terminated,
            self.run_id,
            "FINISHED"
            if status in ("completed", "solved", "pruned")
            else "KILLED"
            if status == "interrupted"
            else "FAILED",
        )


def experiment_id(client, name: str) -> str:
    """The id of the experiment ``name``, created when missing (by whichever process gets there first)."""
    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    try:
        return client.create_experiment(name)
    except Exception:  # noqa: BLE001 - another process created it meanwhile
        found = client.get_experiment_by_name(name)
        if found is None:
            raise
        return found.experiment_id


TRACKERS = {"wandb": WandbLogger, "mlflow": MLflowLogger}


def study_run(settings, study: str, existing: str | None) -> str:
    """The MLflow run that groups a study's trials: ``existing`` (reopened), else a new one named after it."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=settings.mlflow_uri)
    if existing is not None:
        client.update_run(existing, status="RUNNING")
        return existing
    experiment = experiment_id(client, settings.mlflow_experiment)
    return client.create_run(experiment, run_name=study, tags={"rlcli.study": study}).info.run_id


def end_study_run(settings, run_id: str, best: dict[str, Any] | None) -> None:
    """Close the study's MLflow run, with the best value and parameters so far."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    client = MlflowClient(tracking_uri=settings.mlflow_uri)
    if best is not None:
        client.log_batch(
            run_id,
            metrics=[Metric("best/value", float(best["value"]), int(time.time() * 1000), 0)],
            params=[Param(f"best.{k}", str(v)) for k, v in best["params"].items()][:100],
        )
    client.set_terminated(run_id, "FINISHED")
