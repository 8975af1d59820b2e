"""Small Minari datasets of uniformly random actions, cut into episodes of at most a given length: the
stand-in data of the offline presets' identity check (``benchmarks/identity.py``) and of the tests.

Unlike :func:`rlcli.datasets.recording.record_random`, which records a number of steps through rlcli's
env config, this writes a number of whole episodes of a plain gymnasium id, each reset with its own seed.
"""

from __future__ import annotations

import os
from pathlib import Path

import gymnasium as gym
import numpy as np

from rlcli.datasets.find import import_minari


def write_random_episodes(
    env_id: str,
    *,
    root: Path,
    episodes: int = 4,
    seed: int = 0,
    max_steps: int = 50,
    name: str | None = None,
) -> str:
    """The path of a Minari dataset of ``episodes`` random episodes of ``env_id`` (each cut at ``max_steps``
    steps by truncation, episode ``i`` reset with ``seed + i``), written as ``name`` under ``root`` unless
    it is there already (by default a name made from the arguments).

    Raises:
        InputError: minari is not installed.
    """
    minari = import_minari("a dataset of random episodes")
    from minari.data_collector import EpisodeBuffer

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
    # Minari writes under MINARI_DATASETS_PATH and has no argument for the folder: set for the call only.
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
    """Observations stacked on a first axis; a ``Tuple`` observation element by element."""
    if isinstance(observations[0], tuple):
        return tuple(np.stack([o[i] for o in observations]) for i in range(len(observations[0])))
    return np.stack(observations)
