"""Small Minari datasets of uniformly random actions for the tests of offline runs, written once per
test session under a folder the session fixture in conftest.py sets (minari is Python 3.11+: on
older Pythons the callers are skipped)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
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
    minari = pytest.importorskip("minari", reason="the minari extra needs Python 3.11+")
    from minari.data_collector import EpisodeBuffer

    root = root or ROOT
    assert root is not None, "conftest.py's offline_root fixture sets the folder"
    name = name or f"test/{env_id.replace('/', '-').lower()}-random{episodes}-{seed}-v0"
    folder = root / name
    if (folder / "data" / "metadata.json").is_file():
        return str(folder)
    env = gym.make(env_id, max_episode_steps=max_steps)
    env.action_space.seed(seed)
    buffers = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        steps = {"observations": [obs], "actions": [], "rewards": [], "terminations": [], "truncations": []}
        done = False
        while not done:
            action = env.action_space.sample()
            obs, reward, terminated, truncated, _ = env.step(action)
            for key, value in zip(
                ("observations", "actions", "rewards", "terminations", "truncations"),
                (obs, action, reward, terminated, truncated),
            ):
                steps[key].append(value)
            done = terminated or truncated
        buffers.append(
            EpisodeBuffer(
                observations=_stack(steps["observations"]),
                actions=np.stack(steps["actions"]),
                rewards=np.asarray(steps["rewards"], dtype=np.float64),
                terminations=np.asarray(steps["terminations"]),
                truncations=np.asarray(steps["truncations"]),
                infos={},
            )
        )
    env.close()
    import os

    previous = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(root)
    try:
        minari.create_dataset_from_buffers(name, buffers, env=env_id, algorithm_name="random")
    finally:
        if previous is None:
            del os.environ["MINARI_DATASETS_PATH"]
        else:
            os.environ["MINARI_DATASETS_PATH"] = previous
    return str(folder)


def _stack(observations):
    if isinstance(observations[0], tuple):
        return tuple(np.stack([o[i] for o in observations]) for i in range(len(observations[0])))
    return np.stack(observations)
