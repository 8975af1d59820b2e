"""Small Minari datasets of uniformly random actions for the tests of offline runs
(:func:`rlcli.datasets.recording.random_episodes.write_random_episodes`), written once per test session
under a folder the session fixture in conftest.py sets (minari is Python 3.11+: on older Pythons the
callers are skipped)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT: Path | None = None
"""The session's dataset folder (set by conftest.py's ``offline_root`` fixture)."""


def random_dataset(
    env_id: str,
    *,
    episodes: int = 4,
    seed: int = 0,
    max_steps: int = 50,
    name: str | None = None,
    root: Path | None = None,
) -> str:
    """The path of a Minari dataset of ``episodes`` random episodes of ``env_id`` (each cut at
    ``max_steps`` steps by truncation), written on first use, as ``name`` under ``root`` (by default
    a name of its own under the session's folder)."""
    pytest.importorskip("minari", reason="the minari extra needs Python 3.11+")
    from rlcli.datasets.recording.random_episodes import write_random_episodes

    root = root or ROOT
    assert root is not None, "conftest.py's offline_root fixture sets the folder"
    return write_random_episodes(env_id, root=root, episodes=episodes, seed=seed, max_steps=max_steps, name=name)
