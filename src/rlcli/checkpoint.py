"""Atomic checkpoint files, loaded back with ``weights_only``."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch


def to_cpu(value: Any) -> Any:
    """``value`` with every tensor in its dicts and lists moved to the CPU (loadable anywhere)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: to_cpu(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_cpu(item) for item in value)
    return value


def save(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` with torch.save so that ``path`` is either the old or the new file, never half."""
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", delete=False) as tmp:
        torch.save(payload, tmp)
        tmp.flush()
        os.fsync(tmp.fileno())
    _publish(tmp.name, path)


def _publish(temporary: str, path: Path) -> None:
    # NamedTemporaryFile creates 0600 files; give the result the usual permissions.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary, 0o666 & ~umask)
    os.replace(temporary, path)
    # The rename itself is durable only once the folder's entry is on disk.
    try:
        folder = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(folder)
    except OSError:
        pass
    finally:
        os.close(folder)


def load(path: Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint without unpickling arbitrary objects."""
    return torch.load(path, map_location=map_location, weights_only=True)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomically replace ``path`` with ``data`` as indented JSON."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False,
                                     encoding="utf-8") as tmp:
        json.dump(data, tmp, indent=2)
        tmp.write("\n")
        tmp.flush()
        os.fsync(tmp.fileno())
    _publish(tmp.name, path)
