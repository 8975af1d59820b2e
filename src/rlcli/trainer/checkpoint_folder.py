"""A run folder's weights files: the ``checkpoints/`` folder's ``ckpt-<frames>.pt`` files with their
rotation, and the weights file that a run folder or a checkpoint path names (what ``rlcli eval``,
``export`` and ``collect`` read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlcli.config.errors import InputError
from rlcli.trainer import checkpoint


class Checkpoints:
    """A run's ``checkpoints/`` folder: ``ckpt-<frames>.pt`` files, the newest ``keep_last`` kept."""

    PATTERN = "ckpt-*.pt"

    def __init__(self, run_dir: Path, keep_last: int):
        self.folder = Path(run_dir) / "checkpoints"
        self.keep_last = keep_last

    def paths(self) -> list[Path]:
        """The complete checkpoint files, oldest first (temporary files of a cut write are not listed)."""
        found = []
        for path in self.folder.glob(self.PATTERN):
            frames = path.stem.removeprefix("ckpt-")
            if frames.isdigit():
                found.append((int(frames), path))
        return [path for _, path in sorted(found)]

    def latest(self) -> Path | None:
        paths = self.paths()
        return paths[-1] if paths else None

    def save(self, payload: dict[str, Any], frames: int) -> Path:
        """Write ``ckpt-<frames>.pt`` atomically, then delete the oldest beyond ``keep_last``."""
        self.folder.mkdir(exist_ok=True)
        path = self.folder / f"ckpt-{frames:012d}.pt"
        checkpoint.save(path, payload)
        for old in self.paths()[: -self.keep_last]:
            old.unlink(missing_ok=True)
        return path

    def clean_temporaries(self) -> None:
        """Remove the temporary files of writes that a kill cut short."""
        for path in self.folder.glob(".ckpt-*"):
            path.unlink(missing_ok=True)


def find_checkpoint(path: Path) -> tuple[Path, Path]:
    """(run folder, weights file) for a run folder or a checkpoint file in one.

    A folder gives the newer of its ``final.pt`` and its ``checkpoints/ckpt-<frames>.pt`` of most
    frames (``final.pt`` when they are at the same frames): a run resumed and then killed has a
    newer checkpoint than the ``final.pt`` of its first part.
    A file's run folder is the nearest of its folder and the two above holding ``config.toml``
    (``final.pt`` sits in the run folder, ``checkpoints/ckpt-*.pt`` one level down).

    Raises:
        InputError: the path does not exist, or no run folder or weights are found.
    """
    if not path.exists():
        raise InputError(str(path), "no such file or folder; give a run folder or a checkpoint file in one")
    if path.is_dir():
        if not (path / "config.toml").is_file():
            raise InputError(str(path), "not a run folder: there is no config.toml in it")
        final = path / "final.pt"
        # keep_last only matters for saving: nothing is saved here.
        latest = Checkpoints(path, keep_last=1).latest()
        if latest is None and not final.is_file():
            raise InputError(str(path), "the run folder holds no weights yet: no final.pt and no checkpoints/ckpt-*.pt")
        if latest is None:
            return path, final
        if final.is_file() and checkpoint.read(final)["frames"] >= int(latest.stem.removeprefix("ckpt-")):
            return path, final
        return path, latest
    for folder in (path.parent, path.parent.parent):
        if (folder / "config.toml").is_file():
            return folder, path
    raise InputError(
        f"checkpoint {path}",
        "no config.toml beside it or in the two folders above: give a run "
        "folder, or a final.pt or checkpoints/ckpt-*.pt inside one",
    )
