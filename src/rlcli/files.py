"""Files written whole, atomically: a temporary file beside the target, synced to disk, given the
permissions a plain ``open()`` would give, then renamed over the target, so that a reader (or a run
killed mid-write) finds the old file or the new one, never half of one.

:func:`write_atomic` takes bytes, text or a callback writing to a binary file;
:func:`replacing` lends a temporary path to a writer that only takes a path (ffmpeg, the ONNX
exporter). Every file rlcli writes whole goes through one of them.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO


def write_atomic(path: str | Path, content: bytes | str | Callable[[IO[bytes]], object]) -> None:
    """Replace ``path`` with ``content``: bytes, text (written as UTF-8, newlines untranslated) or a
    callback that writes to the binary file it is given. ``path`` is untouched if it raises."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    with replacing(path) as temporary, temporary.open("wb") as file:
        if callable(data):
            data(file)
        else:
            file.write(data)


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` (same suffix) for the block to write; moved over ``path`` when
    the block ends, removed when it raises.

    The file is synced before the rename and the folder after it, where the OS allows: a rename is
    durable only once the folder's entry is on disk.
    """
    path = Path(path)
    # mkstemp rather than a fixed name: two writers of one target never share a temporary.
    descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(descriptor)
    temporary = Path(name)
    try:
        yield temporary
        _sync(temporary)
        # mkstemp makes 0600 files; the target gets what open() would give it.
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        # A signal, a full disk or a failed writer: the old file stays, and no temporary is left.
        temporary.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def _sync(path: Path) -> None:
    # Opened for writing: Windows refuses to flush a file opened read-only.
    descriptor = os.open(path, os.O_RDWR)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _sync_folder(folder: Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        # Windows cannot open a folder; its renames need no separate sync.
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (``os.umask`` can only be
    read by setting it, which races with any thread creating a file meanwhile)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask
