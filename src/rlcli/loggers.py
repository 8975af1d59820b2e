"""Metric backends: one row per logged iteration to csv, jsonl and tensorboard."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import IO, Protocol

from rlcli.config.errors import single

Row = dict[str, float]


class MetricLogger(Protocol):
    def write(self, row: Row) -> None: ...

    def close(self) -> None: ...


class CSVLogger:
    """``metrics.csv`` with the run's fixed columns; a term not reported yet is left empty."""

    def __init__(self, run_dir: Path, columns: list[str]):
        self.file: IO[str] = (run_dir / "metrics.csv").open("w", newline="", encoding="utf-8")
        self.writer = csv.DictWriter(self.file, fieldnames=columns, extrasaction="ignore", restval="")
        self.writer.writeheader()
        self.file.flush()

    def write(self, row: Row) -> None:
        self.writer.writerow(row)
        self.file.flush()

    def close(self) -> None:
        self.file.close()


class JSONLLogger:
    """``metrics.jsonl``, one JSON object per row with every column; NaN and missing terms become null."""

    def __init__(self, run_dir: Path, columns: list[str]):
        self.file: IO[str] = (run_dir / "metrics.jsonl").open("w", encoding="utf-8")
        self.columns = columns

    def write(self, row: Row) -> None:
        values = {key: row.get(key) for key in self.columns}
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in values.items()}
        self.file.write(json.dumps(clean) + "\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()


class TensorBoardLogger:
    """Scalars in ``tensorboard/``, stepped by frames (needs the ``tensorboard`` extra)."""

    def __init__(self, run_dir: Path, columns: list[str]):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(run_dir / "tensorboard"))

    def write(self, row: Row) -> None:
        step = int(row["frames"])
        for key, value in row.items():
            if key not in ("iteration", "frames") and math.isfinite(value):
                self.writer.add_scalar(key, value, step)

    def close(self) -> None:
        self.writer.close()


LOGGERS = {"csv": CSVLogger, "jsonl": JSONLLogger, "tensorboard": TensorBoardLogger}


class MetricLoggers:
    """Every configured backend, written together."""

    def __init__(self, backends: list[MetricLogger]):
        self.backends = backends
        self.last_iteration = 0

    def write(self, row: Row) -> None:
        for backend in self.backends:
            backend.write(row)
        self.last_iteration = int(row["iteration"])

    def close(self) -> None:
        for backend in self.backends:
            backend.close()


def check_backends(cfg, *, source: str | None = None) -> None:
    """Raise a ConfigError when a backend of ``cfg`` (a LoggerConfig) cannot run here."""
    if "tensorboard" in cfg.backends:
        try:
            import tensorboard  # noqa: F401
        except ImportError:
            raise single(source, "the tensorboard backend needs the tensorboard package: "
                                 "pip install 'rlcli[tensorboard]'", path="logger.backends") from None


def make_loggers(cfg, run_dir: Path, columns: list[str]) -> MetricLoggers:
    """The backends named by ``cfg`` (a LoggerConfig), writing rows of ``columns`` under ``run_dir``."""
    return MetricLoggers([LOGGERS[name](run_dir, columns) for name in dict.fromkeys(cfg.backends)])
