"""``--env-package``: the modules a run imports to register its own envs, and the check that a
resumed or evaluated run is given the ones it was trained with."""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from pathlib import Path

from rlcli.config.errors import InputError


def import_env_packages(names: Sequence[str]) -> None:
    """Import each named, installed module so that its gymnasium registrations take effect.

    This is the command line's ``--env-package``: a choice of the person running the
    command, never of a config file, which cannot name code. From Python, import the
    package (or call ``gym.register_envs(module)``) before :func:`rlcli.build_run`.

    Raises:
        InputError: a module that cannot be imported, with the first line of its error.
    """
    for name in names:
        if not name or not all(part.isidentifier() for part in name.split(".")):
            raise InputError(
                f"--env-package {name}",
                "not a module name; give an importable module such as ale_py or my_envs.register",
            )
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure of a user's module is bad input
            first = (str(exc).strip().splitlines() or [""])[0]
            raise InputError(f"--env-package {name}", f"cannot import it: {type(exc).__name__}: {first}") from None


def check_run_packages(run_dir: Path, given: Sequence[str]) -> None:
    """Raise an InputError unless ``given`` (the ``--env-package`` flags) holds every module that the
    run in ``run_dir`` was trained with (``run.json``'s ``env_packages``).

    ``run.json`` only names them: importing code stays the choice of whoever runs the command,
    never of a file.
    """
    try:
        recorded = json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("env_packages") or []
    except (OSError, ValueError, AttributeError):
        # Written when training starts; without it there is nothing to check.
        return
    missing = [name for name in recorded if name not in given]
    if missing:
        raise InputError(
            f"run folder {run_dir}",
            "its env was registered by "
            + " ".join(f"--env-package {name}" for name in missing)
            + "; give the same flags again",
        )
