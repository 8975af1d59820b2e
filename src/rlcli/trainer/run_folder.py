"""The folder a training run writes: made on first use, so that building a run alone creates nothing,
and locked by the process training in it."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from rlcli.config.errors import InputError, folder_error


class RunFolder:
    """``<output_dir>/<name>-<timestamp>``, created the first time :attr:`path` is read.

    Components that keep files (memmap replay storage) and the trainer share it;
    building a run alone (``validate --build``) creates nothing on disk.
    """

    def __init__(self, output_dir: str | Path, name: str):
        self.output_dir, self.name = output_dir, name
        self._path: Path | None = None

    @property
    def created(self) -> bool:
        return self._path is not None

    def use(self, path: Path) -> None:
        """Make the existing folder ``path`` this run's (a resumed run continues in its own folder)."""
        self._path = Path(path)

    @property
    def path(self) -> Path:
        """The folder, made now if it does not exist yet (suffixed when the second is taken).

        Raises:
            InputError: the folder cannot be created; the message names ``--out`` and ``run.output_dir``.
        """
        if self._path is None:
            stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
            base = Path(self.output_dir).expanduser() / f"{self.name}-{stamp}"
            candidate, suffix = base, 1
            while self._path is None:
                try:
                    candidate.mkdir(parents=True)
                    self._path = candidate
                except FileExistsError:
                    suffix += 1
                    candidate = base.with_name(f"{base.name}-{suffix}")
                except OSError as exc:
                    raise folder_error(self.output_dir, exc) from None
        return self._path


def lock_folder(run_dir: Path) -> int | None:
    """Take an exclusive lock on the run folder for this process (released when the returned
    descriptor is closed); None where the platform has no ``flock``.

    Two processes training in one folder would interleave their rows and checkpoints: a
    ``--resume`` of a run that is still going is refused instead. The lock is on the folder
    itself, so no file is added to it.

    Raises:
        InputError: another process holds the lock.
    """
    try:
        import fcntl
    except ImportError:
        return None
    descriptor = os.open(run_dir, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise InputError(
            f"run folder {run_dir}",
            "another rlcli process is training in it; stop it first (SIGINT or SIGTERM saves a checkpoint)",
        ) from None
    return descriptor
