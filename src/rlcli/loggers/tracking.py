"""Tracking servers as metric backends: Weights & Biases (``wandb``) and MLflow (``mlflow``), each
installed by the extra of its name and imported only for a run that names it in ``logger.backends``
(:func:`rlcli.loggers.check_backends` finds a missing one before training); and the MLflow run that
groups the trials of an ``rlcli tune`` study.

Each receives the run's resolved config, every metric row (stepped by frames) and, once the run folder
is complete, ``run.json`` (W&B: the run summary; MLflow: an artifact, with ``config.toml`` and
``final.pt``). Each keeps its run's id in the run folder, so that a resumed run continues the server's
run and a new one never does. The local files are the record: a server that fails or goes away costs a
warning and the rest of what would have gone to it, never the run.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from rlcli.console import err_console
from rlcli.files import write_atomic

Row = dict[str, float]
T = TypeVar("T")


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


def _saved_id(run_dir: Path, name: str, resume_after: int | None) -> str | None:
    """The server's run id kept in ``run_dir/name`` when the run resumes (``resume_after`` is then the
    frames of its checkpoint); None for a new run, or a resumed one that never had this server."""
    saved = run_dir / name
    if resume_after is None or not saved.is_file():
        return None
    return saved.read_text(encoding="utf-8").strip() or None


class _Guard:
    """Calls to one tracking server: the first failure is a warning, and nothing more is sent."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.broken = False

    def __call__(self, what: str, call: Callable[[], T]) -> T | None:
        """``call()``, or None once the server has failed (``what`` names the call in the warning)."""
        if self.broken:
            return None
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - whatever a client raises when its server is gone
            self.broken = True
            first = (str(exc).splitlines() or [""])[0][:200]
            err_console.print(
                f"[yellow]warning:[/] the {self.name} backend stopped at {what} "
                f"({type(exc).__name__}: {first}); the run goes on, its local files are complete"
            )
            return None


class WandbLogger:
    """A W&B run named after the run folder, in ``logger.wandb_project``, grouped by ``logger.group``;
    ``WANDB_MODE=offline`` keeps it in ``RUN_DIR/wandb`` with no account. Its id is kept in
    ``RUN_DIR/wandb-run-id``: a resumed run continues that W&B run, any other run starts its own."""

    ID_FILE = "wandb-run-id"

    def __init__(self, run_dir: Path, settings, config: dict[str, Any], resume_after: int | None):
        import wandb

        self.run_dir, self.settings, self.wandb = run_dir, settings, wandb
        self.guard = _Guard("wandb")
        self.run = self.guard("init", partial(self._start, config, _saved_id(run_dir, self.ID_FILE, resume_after)))

    def _start(self, config: dict[str, Any], resumed: str | None) -> Any:
        # "must": a resumed run continues its own W&B run (W&B drops the rows it already has, those a
        # killed run sent after its checkpoint) or says why it cannot; never a new run under that id.
        run = self.wandb.init(
            project=self.settings.wandb_project,
            entity=self.settings.wandb_entity,
            group=self.settings.group,
            name=self.run_dir.name,
            id=resumed,
            resume="must" if resumed is not None else None,
            dir=str(self.run_dir),
            config=config,
            reinit="create_new",
        )
        if resumed is None:
            write_atomic(self.run_dir / self.ID_FILE, run.id + "\n")
        return run

    def write(self, row: Row) -> None:
        if self.run is not None:
            self.guard("a row", partial(self.run.log, _finite(row), step=int(row["frames"])))

    def flush(self) -> None:
        """W&B sends in the background."""

    def close(self) -> None:
        if self.run is None:
            return
        info = _run_info(self.run_dir)
        summary = {k: v for k, v in info.items() if not isinstance(v, dict)}
        self.guard("run.json", partial(self.run.summary.update, summary))
        final = self.run_dir / "final.pt"
        if self.settings.log_model and final.is_file():
            run = self.run

            def upload() -> None:
                artifact = self.wandb.Artifact(f"{self.run_dir.name}-model", type="model")
                artifact.add_file(str(final))
                run.log_artifact(artifact)

            self.guard("final.pt", upload)
        code = 0 if info.get("status") in ("completed", "solved", "pruned") else 1
        self.guard("finish", partial(self.run.finish, exit_code=code))


# A server that is gone fails a call in seconds instead of minutes (MLflow's own defaults: 7 retries with
# backoff, a 120 s timeout). MLflow reads them from the environment at each request, its background
# sender's included: no client takes them as arguments.
QUICK_FAILURE = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}


def _set_missing(values: dict[str, str]) -> dict[str, str]:
    """Set each variable of ``values`` that the environment lacks (one the user set is kept); returns
    those it set, for :func:`_unset`."""
    added = {name: value for name, value in values.items() if name not in os.environ}
    os.environ.update(added)
    return added


def _unset(added: dict[str, str]) -> None:
    """Remove the variables :func:`_set_missing` set, where they still hold its values."""
    for name, value in added.items():
        if os.environ.get(name) == value:
            del os.environ[name]


class MLflowLogger:
    """An MLflow run in ``logger.mlflow_experiment`` at ``logger.mlflow_uri`` (else ``MLFLOW_TRACKING_URI``,
    else MLflow's local default), nested under ``logger.mlflow_parent`` (``rlcli tune``'s study run).
    Params are the resolved config's dotted keys; metrics go in the background, ``step`` = frames. Its id
    is kept in ``RUN_DIR/mlflow-run-id``: a resumed run reopens that MLflow run.

    :data:`QUICK_FAILURE` holds from the run's start to :meth:`close` only, and only where the user has
    not set those variables: afterwards the process environment is as it was.
    """

    ID_FILE = "mlflow-run-id"

    def __init__(self, run_dir: Path, settings, config: dict[str, Any], resume_after: int | None):
        from mlflow import MlflowClient

        self.run_dir = run_dir
        self.guard = _Guard("mlflow")
        # The rows sent in the background and not yet known to have arrived (RunOperations).
        self.pending: list[Any] = []
        self.client = MlflowClient(tracking_uri=settings.mlflow_uri)
        self.quick_failure = _set_missing(QUICK_FAILURE)
        resumed = _saved_id(run_dir, self.ID_FILE, resume_after)
        self.run_id = self.guard("start", partial(self._start, settings, config, resumed))

    def _start(self, settings, config: dict[str, Any], resumed: str | None) -> str:
        from mlflow.entities import Param

        if resumed is not None:
            self.client.update_run(resumed, status="RUNNING")
            return resumed
        experiment = experiment_id(self.client, settings.mlflow_experiment)
        tags = {"rlcli.run_dir": str(self.run_dir)}
        if settings.mlflow_parent:
            tags["mlflow.parentRunId"] = settings.mlflow_parent
        run_id = self.client.create_run(experiment, run_name=self.run_dir.name, tags=tags).info.run_id
        write_atomic(self.run_dir / self.ID_FILE, run_id + "\n")
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
        sent = self.guard("a row", partial(self.client.log_batch, self.run_id, metrics=metrics, synchronous=False))
        if sent is not None:
            self.pending.append(sent)

    def flush(self) -> None:
        """Wait until the rows sent so far have reached the server (before a checkpoint: a resumed run's
        rows follow them)."""
        pending, self.pending = self.pending, []
        for sent in pending:
            # The client's own operations: mlflow.flush_async_logging() would flush MLflow's default
            # store instead (creating ./mlflow.db), not this client's queue.
            self.guard("a row", sent.wait)

    def close(self) -> None:
        try:
            if self.run_id is not None:
                self._finish(self.run_id)
        finally:
            _unset(self.quick_failure)

    def _finish(self, run_id: str) -> None:
        """The last rows, the run folder's files as artifacts, and the end status of the run ``run_id``."""
        self.flush()
        for name in ("run.json", "config.toml", "final.pt"):
            if (self.run_dir / name).is_file():
                self.guard(name, partial(self.client.log_artifact, run_id, str(self.run_dir / name)))
        status = _run_info(self.run_dir).get("status")
        end = (
            "FINISHED"
            if status in ("completed", "solved", "pruned")
            else "KILLED"
            if status == "interrupted"
            else "FAILED"
        )
        self.guard("the end", partial(self.client.set_terminated, run_id, end))


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


TRACKERS: dict[str, type[WandbLogger] | type[MLflowLogger]] = {"wandb": WandbLogger, "mlflow": MLflowLogger}


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
