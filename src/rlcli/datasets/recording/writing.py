"""Episodes written as a Minari dataset: where ``--out`` puts it, a check of the free space before
anything is written, and a write that leaves either the complete dataset or nothing."""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlcli.config.errors import InputError
from rlcli.datasets import datasets_root, import_minari

Episode = dict[str, Any]
"""One episode to write: ``observations`` ([L + 1, ...], a dict of arrays for a Dict space),
``actions`` [L, ...], ``rewards`` [L], ``terminations`` and ``truncations`` [L] bool."""


@dataclass(frozen=True)
class Recorded:
    """What a recording wrote: the dataset's folder, its size and mean return, and what it came from."""

    path: Path
    steps: int
    episodes: int
    return_mean: float
    source: Path

    @classmethod
    def of(cls, path: Path, episodes: list[Episode], source: Path) -> Recorded:
        """The record of ``episodes``, written to ``path`` from ``source``."""
        returns = [float(np.sum(e["rewards"])) for e in episodes]
        return cls(path, sum(len(e["rewards"]) for e in episodes), len(episodes), float(np.mean(returns)), source)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "steps": self.steps,
            "episodes": self.episodes,
            "return_mean": self.return_mean,
            "source": str(self.source),
        }


def target(out: str) -> tuple[Path, str]:
    """(root, id) of where ``out`` writes: a Minari id under :func:`datasets_root`, or a path (one holding a
    separator, or starting with ``.`` or ``~``) whose last part is the id and whose parent is the root."""
    if os.sep in out and (out.startswith((".", "~", os.sep)) or Path(out).expanduser().parent.exists()):
        path = Path(out).expanduser().absolute()
        return path.parent, path.name
    return datasets_root(), out


def write_dataset(
    out: str,
    episodes: list[Episode],
    *,
    env_spec: Any,
    algorithm: str,
    description: str,
    overwrite: bool = False,
    what: str = "--out",
) -> Path:
    """Write ``episodes`` as the Minari dataset ``out`` (an id or a path, see :func:`target`); returns its folder.

    The dataset is written in a hidden folder beside its place and moved there when complete, so that an
    interruption or a full disk leaves no half-written dataset (the hidden folder is removed).

    Raises:
        InputError: minari is missing, ``out`` exists (without ``overwrite``) or is not a valid id, or the
            disk is full or not writable.
    """
    minari = import_minari(what)
    root, dataset_id = target(out)
    _check_id(dataset_id, what)
    final = root / dataset_id
    if final.exists() and not overwrite:
        raise InputError(what, f"{final} already exists; choose another id, or pass --overwrite to replace it")
    check_disk(root, episodes, what=what)
    buffers = _buffers(episodes)
    staging = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".rlcli-partial-", dir=root))
        with _minari_root(staging), warnings.catch_warnings():
            # Minari asks for an author, an e-mail and a code link: rlcli has none to give.
            warnings.simplefilter("ignore", UserWarning)
            minari.create_dataset_from_buffers(
                dataset_id, buffers, env=env_spec, algorithm_name=algorithm, description=description
            )
        _replace(staging / dataset_id, final)
    # Minari writes the env's spec down, which gymnasium refuses for an env registered with a callable
    # entry point (an --env-package may register one): the dataset cannot name its env.
    except ValueError as exc:
        raise InputError(
            what,
            f"cannot write the env's spec into the dataset: {str(exc).splitlines()[0][:300]}; register the env "
            "with an entry point written as 'module:attribute' instead; nothing was written",
        ) from None
    # h5py reports a failed write as an OSError or a RuntimeError (a full disk, a file-size limit).
    except (OSError, RuntimeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0][:200]
        raise InputError(
            what,
            f"cannot write the dataset {final}: {reason}; nothing was written "
            "(check the free space and permissions of the folder)",
        ) from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return final


def _check_id(dataset_id: str, what: str) -> None:
    """Raise an InputError when ``dataset_id`` is not of the form Minari accepts."""
    from minari.dataset.minari_dataset import parse_dataset_id

    try:
        parse_dataset_id(dataset_id)
    except Exception as exc:  # noqa: BLE001 - minari's own check of the id's form
        raise InputError(
            what, f"{dataset_id!r} is not a Minari dataset id ([namespace/]name-vN, such as pendulum/expert-v0): {exc}"
        ) from None


def _buffers(episodes: list[Episode]) -> list[Any]:
    """The episodes as minari's EpisodeBuffers (no infos)."""
    from minari.data_collector import EpisodeBuffer

    return [
        EpisodeBuffer(
            observations=e["observations"],
            actions=e["actions"],
            rewards=e["rewards"],
            terminations=e["terminations"],
            truncations=e["truncations"],
            infos={},
        )
        for e in episodes
    ]


@contextmanager
def _minari_root(folder: Path) -> Iterator[None]:
    """Point ``MINARI_DATASETS_PATH`` at ``folder`` for the block, then restore it: minari writes a new
    dataset under that variable and takes no folder of its own."""
    previous = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(folder)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("MINARI_DATASETS_PATH", None)
        else:
            os.environ["MINARI_DATASETS_PATH"] = previous


def check_disk(root: Path, episodes: list[Episode], *, what: str = "--out") -> None:
    """Raise an InputError, before anything is written, when the disk holding ``root`` has less free space
    than the episodes' arrays need (with a fifth more for the file's own structure)."""
    needed = int(1.2 * sum(_nbytes(value) for episode in episodes for value in episode.values())) + 2**20
    folder = root
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    if needed > free:
        from rlcli.replay.storage import human_bytes

        raise InputError(
            what,
            f"the dataset needs about {human_bytes(needed)} but {folder} has only "
            f"{human_bytes(free)} free; nothing was written",
        )


def _nbytes(value: Any) -> int:
    return sum(_nbytes(v) for v in value.values()) if isinstance(value, dict) else np.asarray(value).nbytes


def _replace(new: Path, final: Path) -> None:
    """Move the complete dataset ``new`` to ``final``; an existing ``final`` is moved aside first and
    removed only once the new one is in place."""
    final.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if final.exists():
        old = final.with_name(f".rlcli-old-{final.name}-{os.getpid()}")
        final.rename(old)
    new.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
