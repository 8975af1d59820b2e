"""Atomic checkpoint files, loaded back with ``weights_only``; the checks that make a wrong
or damaged file a clear error instead of a traceback."""

from __future__ import annotations

import json
import os
import pickle
import re
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import torch
from torch import nn

from rlcli.config.errors import InputError

FORMAT = 1
"""The layout version of the files written here; a file of another version is refused."""


class CheckpointError(InputError):
    """A checkpoint (or final.pt) that cannot be used: missing, damaged, unsafe or from another config."""


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
    _write_atomic(path, lambda file: torch.save(payload, file))


def _write_atomic(path: Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Replace ``path`` by what ``write`` puts in a temporary file beside it, once that is on disk."""
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", delete=False) as tmp:
        try:
            write(tmp)
            tmp.flush()
            os.fsync(tmp.fileno())
        except BaseException:
            # A signal or a full disk mid-write: the old file stays, and no temporary is left.
            os.unlink(tmp.name)
            raise
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
    """Read a checkpoint without unpickling arbitrary objects (tensors and plain containers only).

    The tensors are mapped from the file, not read into memory: a resumed replay buffer is
    copied once, into its own storage, and reading a header costs little.
    """
    return torch.load(path, map_location=map_location, weights_only=True, mmap=True)


def read(path: Path) -> dict[str, Any]:
    """An rlcli checkpoint or ``final.pt``, loaded with ``weights_only``.

    Raises:
        CheckpointError: the file is missing, truncated or corrupt, holds objects other than
            tensors and plain containers (refused before any of them is built), or is not a
            checkpoint of this format.
    """
    path = Path(path)
    what = f"checkpoint {path}"
    if not path.is_file():
        raise CheckpointError(what, "no such file" if not path.exists() else "not a file")
    try:
        payload = load(path)
    except pickle.UnpicklingError as exc:
        # weights_only refuses the first global it does not know, before calling anything.
        # (Bytes that are not a pickle at all fail the same way, as an unsupported operand.)
        found = re.search(r"unsupported global:?\s+(?:GLOBAL\s+)?([\w.]+)", str(exc), re.IGNORECASE)
        if found:
            raise CheckpointError(
                what,
                "refused: it holds objects other than tensors and plain containers, "
                f"which could run code when loaded (it names {found.group(1)}); "
                "nothing in it was run",
            ) from None
        raise CheckpointError(what, "truncated or corrupt, cannot be read (not a torch checkpoint file)") from None
    except (RuntimeError, EOFError, OSError, ValueError, zipfile.BadZipFile) as exc:
        detail = (str(exc).strip().splitlines() or [""])[0]
        raise CheckpointError(
            what, f"truncated or corrupt, cannot be read ({type(exc).__name__}: {detail[:160]})"
        ) from None
    if not isinstance(payload, dict) or not isinstance(payload.get("agent"), dict) or "format" not in payload:
        raise CheckpointError(what, "not an rlcli checkpoint (no agent weights or format in it)")
    if payload["format"] != FORMAT:
        raise CheckpointError(
            what, f"written in checkpoint format {payload['format']!r}; this rlcli reads format {FORMAT}"
        )
    return payload


def check_origin(payload: dict[str, Any], *, algo: str, env: str, spaces: dict[str, str], what: str) -> None:
    """Raise a CheckpointError unless ``payload`` was written for ``algo`` on ``env`` with ``spaces``."""
    if payload.get("algo") != algo:
        raise CheckpointError(
            what, f"it was written by {payload.get('algo')!r}, not by this config's algorithm {algo!r} (algo.name)"
        )
    if payload.get("env") != env:
        raise CheckpointError(
            what, f"it was trained on {payload.get('env')!r}, not on this config's env {env!r} (env.id)"
        )
    saved = payload.get("spaces")
    if saved is not None and saved != spaces:
        diff = ", ".join(
            f"{role}: {saved.get(role)} in the checkpoint, {spaces.get(role)} here"
            for role in spaces
            if saved.get(role) != spaces.get(role)
        )
        raise CheckpointError(what, f"the env's spaces differ ({diff})")


def restore_agent(agent: nn.Module, weights: dict[str, torch.Tensor], *, what: str) -> None:
    """Load ``weights`` into ``agent``, or raise a CheckpointError naming each tensor that differs.

    A network of another shape (``network.hidden_sizes``, the critic count) is named tensor by
    tensor with both shapes, instead of ``load_state_dict``'s size-mismatch traceback.
    """
    own = agent.state_dict()
    problems = []
    for name in own.keys() - weights.keys():
        problems.append(f"{name} is missing from the checkpoint")
    for name in weights.keys() - own.keys():
        problems.append(f"{name} is in the checkpoint but not in this config's networks")
    for name in own.keys() & weights.keys():
        mine, theirs = own[name], weights[name]
        if not isinstance(theirs, torch.Tensor) or tuple(mine.shape) != tuple(theirs.shape):
            shape = tuple(theirs.shape) if isinstance(theirs, torch.Tensor) else type(theirs).__name__
            problems.append(
                f"{name} is {list(shape) if isinstance(shape, tuple) else shape} in the "
                f"checkpoint but {list(mine.shape)} in this config's networks"
            )
    if problems:
        shown = sorted(problems)[:6]
        more = f"; and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        raise CheckpointError(
            what,
            "its weights do not fit the networks this config builds (a different "
            "network.* or algo.* size?): " + "; ".join(shown) + more,
        )
    agent.load_state_dict(weights)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomically replace ``path`` with ``data`` as indented JSON."""
    write_text(path, json.dumps(data, indent=2) + "\n")


def write_text(path: Path, text: str) -> None:
    """Atomically replace ``path`` with ``text`` (UTF-8)."""
    data = text.encode("utf-8")
    _write_atomic(path, lambda file: file.write(data))


def rng_state() -> dict[str, Any]:
    """The process-wide generators: torch's CPU (and CUDA, once initialised), numpy's and Python's."""
    import random

    import numpy as np

    kind, keys, position, has_gauss, gauss = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None,
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype("int64")),
            "position": int(position),
            "has_gauss": int(has_gauss),
            "gauss": float(gauss),
        },
        "python": random.getstate(),
    }


def set_rng_state(state: dict[str, Any]) -> None:
    """Set the generators :func:`rng_state` saved (CUDA's only when this process has as many devices)."""
    import random

    import numpy as np

    torch.set_rng_state(state["torch"])
    cuda = state["cuda"]
    if cuda is not None and torch.cuda.is_available() and torch.cuda.device_count() == len(cuda):
        torch.cuda.set_rng_state_all(cuda)
    saved = state["numpy"]
    np.random.set_state(
        (saved["kind"], saved["keys"].numpy().astype("uint32"), saved["position"], saved["has_gauss"], saved["gauss"])
    )
    random.setstate(state["python"])


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
        save(path, payload)
        for old in self.paths()[: -self.keep_last]:
            old.unlink(missing_ok=True)
        return path

    def clean_temporaries(self) -> None:
        """Remove the temporary files of writes that a kill cut short."""
        for path in self.folder.glob(".ckpt-*"):
            path.unlink(missing_ok=True)


BUDGETS = ("collector.total_frames", "data.total_steps")
"""The budgets a resumed run may raise: an online run's frames, an offline run's gradient steps."""


def resume_config_problems(saved: Any, new: Any) -> list[str]:
    """The fields in which the config ``new`` differs from the run's ``saved`` config, beyond what a
    resumed run may change: the budget (:data:`BUDGETS`), ``logger.*`` and ``timing.*``."""
    allowed_sections = {"logger", "timing"}
    problems = []

    def walk(path: str, before: Any, after: Any) -> None:
        if isinstance(before, dict) and isinstance(after, dict):
            for key in dict.fromkeys([*before, *after]):
                walk(f"{path}.{key}" if path else key, before.get(key), after.get(key))
        elif before != after and path.split(".")[0] not in allowed_sections and path not in BUDGETS:
            problems.append(f"{path} ({before!r} in the run, {after!r} now)")

    walk("", saved.model_dump(mode="json"), new.model_dump(mode="json"))
    return problems


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
        if final.is_file() and read(final)["frames"] >= int(latest.stem.removeprefix("ckpt-")):
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
