"""Atomic checkpoint files, loaded back with ``weights_only``."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch


def save(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` with torch.save so that ``path`` is either the old or the new file, never half."""
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", delete=False) as tmp:
        torch.save(payload, tmp)
    os.replace(tmp.name, path)


def load(path: Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint without unpickling arbitrary objects."""
    return torch.load(path, map_location=map_location, weights_only=True)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomically replace ``path`` with ``data`` as indented JSON."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False,
                                     encoding="utf-8") as tmp:
        json.dump(data, tmp, indent=2)
        tmp.write("\n")
    os.replace(tmp.name, path)
