"""Finding a Minari dataset by id or path, and importing minari (the ``minari`` extra, Python 3.11 and
newer: only this package imports it, and only when a run reads or writes a dataset)."""

from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path
from typing import Any

from rlcli.config.errors import InputError
from rlcli.config.recipes import RECIPES, how_to_get

EXTRA = "minari"
"""The extra that installs minari (with h5py)."""


class DatasetNotFound(InputError):
    """No dataset by that name: neither a path nor an id under :func:`datasets_root`."""


def import_minari(what: str) -> Any:
    """The ``minari`` module; an InputError naming the extra when it is not installed.

    ``what`` names what needs it (``data.dataset``, ``rlcli collect``).
    """
    try:
        import minari
    except ImportError as exc:
        hint = " (minari needs Python 3.11 or newer)" if sys.version_info < (3, 11) else ""
        raise InputError(
            what,
            f"datasets are read and written with minari, which is not installed{hint}: "
            f"pip install 'rlcli[{EXTRA}]' ({type(exc).__name__}: {exc})",
        ) from None
    return minari


def datasets_root() -> Path:
    """Where minari keeps datasets by id: ``MINARI_DATASETS_PATH``, else ``~/.minari/datasets``."""
    configured = os.environ.get("MINARI_DATASETS_PATH")
    return Path(configured).expanduser() if configured else Path.home() / ".minari" / "datasets"


def resolve(name: str, *, what: str = "data.dataset") -> Path:
    """The data folder (the one holding ``metadata.json``) of the dataset ``name``: a path to a dataset
    folder or to its ``data/`` folder, or a Minari id under :func:`datasets_root`.

    Raises:
        InputError: nothing there; names where it looked and the close ids found.
    """
    path = Path(name).expanduser()
    for candidate in (path / "data", path):
        if (candidate / "metadata.json").is_file():
            return candidate
    root = datasets_root()
    by_id = root / name / "data"
    if (by_id / "metadata.json").is_file():
        return by_id
    if path.exists():
        raise InputError(
            what, f"{name!r} is not a Minari dataset: {path} holds no metadata.json (nor data/metadata.json)"
        )
    if name in RECIPES:
        hint = ""
    else:
        known = local_ids(root)
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = (
            f"; did you mean {', '.join(repr(c) for c in close)}?"
            if close
            else f"; datasets there: {', '.join(known[:8])}" + (" ..." if len(known) > 8 else "")
            if known
            else "; none are there"
        )
    raise DatasetNotFound(
        what,
        f"no dataset {name!r}: not a path to a dataset folder, and not an id under "
        f"{root} (MINARI_DATASETS_PATH{' is set' if 'MINARI_DATASETS_PATH' in os.environ else ' unset'})"
        + hint
        + f"; {how_to_get(name)}",
    )


def local_ids(root: Path) -> list[str]:
    """The ids of the datasets under ``root`` (folders holding ``data/metadata.json``), sorted."""
    if not root.is_dir():
        return []
    return sorted(str(meta.parent.parent.relative_to(root)) for meta in root.glob("**/data/metadata.json"))
