"""Metric backends: one row per logged iteration to csv, jsonl and tensorboard files in the run folder,
and to the tracking servers of :mod:`rlcli.loggers.tracking` (W&B, MLflow)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import IO, Protocol

from rlcli.config.errors import single
from rlcli.files import write_atomic

Row = dict[str, float]


class MetricLogger(Protocol):
    def write(self, row: Row) -> None: ...

    def flush(self) -> None:
        """Put every row written so far on disk (before a checkpoint)."""
        ...

    def close(self) -> None: ...


def keep_rows(path: Path, last_iteration: int, iteration_of) -> bool:
    """Cut the metrics file ``path`` back to its complete lines whose row is at most
    ``last_iteration`` (``iteration_of(line)``, None for a header); returns whether it existed.

    A resumed run appends to the file from its checkpoint on: the rows a killed run wrote
    after that checkpoint, and a line cut off mid-write, are dropped (atomically), so that no
    row is duplicated or half.
    """
    if not path.is_file():
        return False
    kept = []
    with path.open(encoding="utf-8", newline="") as file:
        for line in file:
            if not line.endswith("\n"):
                break
            try:
                iteration = iteration_of(line)
            except (ValueError, IndexError, KeyError, TypeError, json.JSONDecodeError):
                break
            if iteration is not None and iteration > last_iteration:
                break
            kept.append(line)
    write_atomic(path, "".join(kept))
    return True


def _csv_iteration(line: str) -> int | None:
    first = next(csv.reader([line]))[0]
    return None if first == "iteration" else int(first)


def _jsonl_iteration(line: str) -> int:
    return int(json.loads(line)["iteration"])


class CSVLogger:
    """``metrics.csv`` with the run's fixed columns; a term not reported yet is left empty.

    With ``resume_after``, the file is cut back to the rows up to that iteration and appended to.
    """

    def __init__(self, run_dir: Path, columns: list[str], resume_after: int | None = None):
        path = run_dir / "metrics.csv"
        existed = resume_after is not None and keep_rows(path, resume_after, _csv_iteration)
        self.file: IO[str] = path.open("a" if existed else "w", newline="", encoding="utf-8")
        self.writer = csv.DictWriter(self.file, fieldnames=columns, extrasaction="ignore", restval="")
        if not existed or path.stat().st_size == 0:
            self.writer.writeheader()
        self.file.flush()

    def write(self, row: Row) -> None:
        self.writer.writerow(row)
        self.file.flush()

    def flush(self) -> None:
        self.file.flush()

    def close(self) -> None:
        self.file.close()


class JSONLLogger:
    """``metrics.jsonl``, one JSON object per row with every column; NaN and missing terms become null."""

    def __init__(self, run_dir: Path, columns: list[str], resume_after: int | None = None):
        path = run_dir / "metrics.jsonl"
        existed = resume_after is not None and keep_rows(path, resume_after, _jsonl_iteration)
        self.file: IO[str] = path.open("a" if existed else "w", encoding="utf-8")
        self.columns = columns

    def write(self, row: Row) -> None:
        values = {key: row.get(key) for key in self.columns}
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in values.items()}
        self.file.write(json.dumps(clean) + "\n")
        self.file.flush()

    def flush(self) -> None:
        self.file.flush()

    def close(self) -> None:
        self.file.close()


class TensorBoardLogger:
    """Scalars in ``tensorboard/``, stepped by frames (needs the ``tensorboard`` extra). A resumed
    run purges the events past its checkpoint's frames (``resume_after`` is then those frames)."""

    def __init__(self, run_dir: Path, columns: list[str], resume_after: int | None = None):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(run_dir / "tensorboard"), purge_step=resume_after)

    def flush(self) -> None:
        self.writer.flush()

    def write(self, row: Row) -> None:
        step = int(row["frames"])
        for key, value in row.items():
            if key not in ("iteration", "frames") and math.isfinite(value):
                self.writer.add_scalar(key, value, step)

    def close(self) -> None:
        self.writer.close()


LOGGERS: dict[str, type[CSVLogger] | type[JSONLLogger] | type[TensorBoardLogger]] = {
    "csv": CSVLogger,
    "jsonl": JSONLLogger,
    "tensorboard": TensorBoardLogger,
}


class MetricLoggers:
    """Every configured backend, written together."""

    def __init__(self, backends: list[MetricLogger]):
        self.backends = backends
        self.last_iteration = 0

    def write(self, row: Row) -> None:
        for backend in self.backends:
            backend.write(row)
        self.last_iteration = int(row["iteration"])

    def flush(self) -> None:
        for backend in self.backends:
            backend.flush()

    def close(self) -> None:
        for backend in self.backends:
            backend.close()


def _import_tensorboard() -> None:
    import tensorboard  # noqa: F401


def _import_wandb() -> None:
    import wandb  # noqa: F401


def _import_mlflow() -> None:
    import mlflow  # noqa: F401


# backend -> what imports its package; the package and the extra that installs it share its name.
_PACKAGES = {"tensorboard": _import_tensorboard, "wandb": _import_wandb, "mlflow": _import_mlflow}


def check_backends(cfg, *, source: str | None = None) -> None:
    """Raise a ConfigError when a backend of ``cfg`` (a LoggerConfig) cannot run here: its package
    is missing (the error names the extra)."""
    for backend in dict.fromkeys(cfg.backends):
        if backend not in _PACKAGES:
            continue
        try:
            _PACKAGES[backend]()
        except ImportError as exc:
            raise single(
                source,
                f"the {backend} backend needs the {backend} package: pip install "
                f"'rlcli[{backend}]' ({type(exc).__name__}: {exc})",
                path="logger.backends",
            ) from None


def make_loggers(
    cfg, run_dir: Path, columns: list[str], *, resume: tuple[int, int] | None = None, config: dict | None = None
) -> MetricLoggers:
    """The backends named by ``cfg`` (a LoggerConfig), writing rows of ``columns`` under ``run_dir``.

    ``resume`` = (iteration, frames) of the checkpoint a resumed run continues from: its files
    keep their rows up to it and are appended to. ``config`` (the run's resolved config, nested)
    goes to the tracking servers.
    """
    backends: list[MetricLogger] = []
    for name in dict.fromkeys(cfg.backends):
        if name in ("wandb", "mlflow"):
            from rlcli.loggers.tracking import TRACKERS

            backends.append(TRACKERS[name](run_dir, cfg, config or {}, None if resume is None else resume[1]))
            continue
        # TensorBoard hides events at and past purge_step: the checkpoint's own point stays.
        after = None if resume is None else resume[1] + 1 if name == "tensorboard" else resume[0]
        backends.append(LOGGERS[name](run_dir, columns, after))
    loggers = MetricLoggers(backends)
    if resume is not None:
        loggers.last_iteration = resume[0]
    return loggers
