"""Checkpoint files: written whole (through :func:`rlcli.files.write_atomic`), loaded back with
``weights_only``, and the checks (format, origin, network shapes) that make a wrong or damaged file a
clear error instead of a traceback.

The ``checkpoints/`` folder's rotation and the weights a path names are in
:mod:`~rlcli.trainer.checkpoint_folder`; the generators' state in :mod:`~rlcli.trainer.rng`.
"""

from __future__ import annotations

import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import torch
from torch import nn

from rlcli.config.errors import InputError
from rlcli.files import write_atomic

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
    write_atomic(path, lambda file: torch.save(payload, file))


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
