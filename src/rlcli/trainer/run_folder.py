"""The folder a training run writes: made on first use, so that building a run alone creates nothing."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rlcli.config.errors import folder_error


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
