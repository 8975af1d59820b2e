"""Where a run came from: seed, versions, the config's git commit and the overrides."""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any


def provenance(
    seed: int, *, overrides: Sequence[str] = (), env_packages: Sequence[str] = (), config_file: str | Path | None = None
) -> dict[str, Any]:
    """What ``run.json`` records so that a run can be traced and repeated.

    ``overrides`` are what the user gave on the command line (``--set KEY=VALUE``, ``--seed N``);
    ``env_packages`` the modules ``--env-package`` imported, which a later command on the
    run (resume, eval) needs again.
    The git commit is that of the repository holding ``config_file`` (else the working folder),
    with ``dirty`` when it has uncommitted changes; None outside a repository or without git.
    """
    return {
        "seed": seed,
        "versions": {
            "rlcli": _version("rlcli"),
            "torch": _version("torch"),
            "gymnasium": _version("gymnasium"),
            "tensordict": _version("tensordict"),
            "python": platform.python_version(),
        },
        "git": git_commit(
            Path(config_file).resolve().parent if config_file and Path(config_file).is_file() else Path.cwd()
        ),
        "overrides": list(overrides),
        "env_packages": list(env_packages),
        "command": _command(),
    }


def _command() -> list[str]:
    """The command line, with ``python -m rlcli`` (``__main__.py``) shown as ``rlcli``."""
    if not sys.argv or not sys.argv[0]:
        return []
    name = Path(sys.argv[0]).name
    return ["rlcli" if name in ("__main__.py", "-c") else name, *sys.argv[1:]]


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def git_commit(folder: Path) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the git work tree holding ``folder``, or None (one ``git`` call)."""
    try:
        # The folder is the config's, which may be untrusted: a repository's own config could
        # name a command for git to run (core.fsmonitor); switch that off, and take no locks.
        done = subprocess.run(
            [
                "git",
                "-c",
                "core.fsmonitor=false",
                "--no-optional-locks",
                "-C",
                str(folder),
                "status",
                "--porcelain=v2",
                "--branch",
                "--untracked-files=no",
            ],
            capture_output=True,
            text=True,
            timeout=5,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    lines = done.stdout.splitlines()
    commit = next((line.split()[2] for line in lines if line.startswith("# branch.oid ")), None)
    if commit is None or commit == "(initial)":
        return None
    return {"commit": commit, "dirty": any(not line.startswith("#") for line in lines)}
