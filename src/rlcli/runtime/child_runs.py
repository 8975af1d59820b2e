"""A training run in a child ``rlcli train`` process, as ``--seeds`` and ``rlcli tune`` start them: its
command line, and its outcome read back from its run folder and exit status."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlcli.config.load import Override


@dataclass
class SeedRun:
    """One seed's outcome, read from its run folder's ``run.json``."""

    seed: int
    status: str = "not started"
    """completed, solved, interrupted, failed, or "not started" (stopped before its turn)."""
    exit_code: int | None = None
    run_dir: str | None = None
    log: str | None = None
    reason: str | None = None
    """Why a failed seed failed: its error line."""
    frames: int | None = None
    solved_frames: int | None = None
    solved_s: float | None = None
    """Training seconds until the rolling return reached ``run.stop_at_return``."""
    solved_process_s: float | None = None
    """The same, counted from the start of the seed's process (start-up included)."""
    last_return: float | None = None
    best_return: float | None = None
    final_eval: float | None = None
    """The mean return of the final evaluation (``eval.final_episodes``)."""
    train_s: float | None = None
    """Seconds of training (``run.json``'s ``wall_time_s``: no start-up, no final evaluation)."""
    wall_s: float | None = None
    """Seconds the seed's process ran."""


def train_command(path: Path, overrides: Sequence[str | Override], env_packages: Sequence[str]) -> list[str]:
    """The ``rlcli train`` command line that every seed shares."""
    texts = [item.text if isinstance(item, Override) else item for item in overrides]
    # `python -m rlcli` would put the working folder first on sys.path; this does not.
    command = [sys.executable, "-c", CHILD, "train", str(path.resolve()), "--quiet"]
    for package in env_packages:
        command += ["--env-package", package]
    for text in texts:
        command += ["--set", text]
    return command


# Runs the CLI without the working folder on sys.path, as the `rlcli` script would.
CHILD = (
    "import sys; sys.path[:] = [p for p in sys.path if p != '']; sys.argv[0] = 'rlcli'; "
    "from rlcli.cli import main; main()"
)


def read_outcome(run: SeedRun, group: Path, name: str, code: int, wall_s: float) -> None:
    run.exit_code, run.wall_s = code, round(wall_s, 3)
    folders = sorted(group.glob(f"{name}-seed{run.seed}-*"))
    info: dict[str, Any] = {}
    if folders:
        run.run_dir = str(folders[-1])
        try:
            info = json.loads((folders[-1] / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            info = {}
    # 130 and 143: stopped by SIGINT or SIGTERM, its folder complete and marked interrupted.
    run.status = info.get("status") or ("interrupted" if code in (130, 143) else "failed")
    if code not in (0, 130, 143) and run.status != "failed":
        run.status = "failed"
    run.frames = info.get("frames")
    run.solved_frames = info.get("solved_at_frames")
    run.solved_s = info.get("solved_at_seconds")
    if run.solved_s is not None and info.get("startup_s") is not None:
        run.solved_process_s = round(info["startup_s"] + run.solved_s, 3)
    run.last_return, run.best_return = info.get("last_return"), info.get("best_return")
    run.final_eval = (info.get("final_eval") or {}).get("mean")
    run.train_s = info.get("wall_time_s")
    if run.status == "failed":
        run.reason = info.get("error") or _killed_by(code) or _error_line(run.log) or f"exit status {code}"


def _killed_by(code: int) -> str | None:
    """``killed by SIGKILL`` for the negative exit status of a process a signal ended."""
    if code >= 0:
        return None
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def _error_line(log: str | None) -> str | None:
    """The first ``error:`` message of a seed's output (with its indented detail lines),
    else its last line."""
    if log is None:
        return None
    try:
        lines = [line.rstrip() for line in Path(log).read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError:
        return None
    for index, line in enumerate(lines):
        if line.startswith("error:"):
            detail = [line]
            for more in lines[index + 1 :]:
                if not more.startswith(" "):
                    break
                detail.append(more.strip())
            return " ".join(detail)
    return lines[-1].strip() if lines else None
