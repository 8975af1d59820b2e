"""A run's saved replay buffer as a dataset (a "replay" dataset, as D4RL's medium-replay): its
transitions read from a checkpoint and chained back into episodes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rlcli.config.errors import InputError
from rlcli.config.load import load_config
from rlcli.datasets import import_minari
from rlcli.datasets.recording.writing import Episode, Recorded, write_dataset
from rlcli.envs import check_run_packages, import_env_packages, make_env
from rlcli.trainer import checkpoint
from rlcli.trainer.checkpoint_folder import Checkpoints


def record_replay(path: str | Path, *, out: str, overwrite: bool = False, env_packages: Sequence[str] = ()) -> Recorded:
    """Write the replay buffer saved with a checkpoint as the Minari dataset ``out``. ``path`` is a run
    folder (its newest checkpoint) or a checkpoint file in its ``checkpoints/``.

    A buffer keeps transitions, not episodes: consecutive transitions are chained into episodes where one's
    next observation is the next one's observation. A chain that ends without a termination is truncated.

    Raises:
        InputError: no checkpoint with a replay buffer (an on-policy run, ``checkpoint.replay = false``,
            memmap storage), n-step transitions, or the output exists.
    """
    import_minari("rlcli collect")
    path = Path(path)
    folder = path.parent.parent if path.is_file() else path
    check_run_packages(folder, list(env_packages))
    import_env_packages(list(env_packages))
    if not (folder / "config.toml").is_file():
        raise InputError("--from-replay", f"{path} is not a run folder (no config.toml) or a checkpoint in one")
    latest = path if path.is_file() else Checkpoints(folder, 1).latest()
    if latest is None:
        raise InputError("--from-replay", f"{folder} holds no checkpoint (checkpoints/ckpt-*.pt)")
    cfg = load_config(folder / "config.toml")
    stored = _replay_tensors(checkpoint.read(latest), latest)
    env = make_env(cfg.env, source=str(folder / "config.toml"))
    spec = env.spec
    env.close()
    episodes = _chain(stored)
    written = write_dataset(
        out,
        episodes,
        env_spec=spec,
        algorithm=f"rlcli {cfg.algo.name} replay",
        description=f"the replay buffer of {folder} at {latest.name}",
        overwrite=overwrite,
    )
    return Recorded.of(written, episodes, latest)


def _replay_tensors(payload: dict, path: Path) -> dict[str, np.ndarray]:
    """The buffer's transitions in the order they were stored (oldest first), as numpy arrays."""
    try:
        buffer = payload["ranks"][0]["algo_state"]["replay"]["buffer"]
    except (KeyError, IndexError, TypeError):
        raise InputError(
            "--from-replay", f"{path} holds no replay buffer (an on-policy run, or an offline one)"
        ) from None
    storage = buffer.get("storage")
    if not storage or storage.get("memmap"):
        raise InputError(
            "--from-replay",
            f"{path} holds no transitions: the run saved checkpoints without its buffer "
            "(checkpoint.replay = false) or keeps it in memmap files",
        )
    tensors = storage["tensors"] if "tensors" in storage else storage
    if "discount" in tensors:
        raise InputError(
            "--from-replay",
            "the buffer holds n-step transitions (n_step > 1), whose rewards are sums: "
            "they are not a dataset of single steps",
        )
    rows = len(next(iter(tensors.values())))
    # A full ring's oldest transition sits at the cursor; a filling one starts at row 0 (cursor = rows).
    order = np.roll(np.arange(rows), -(int(buffer["cursor"]) % max(rows, 1)))
    return {key: np.asarray(value)[order] for key, value in tensors.items() if isinstance(key, str)}


def _chain(stored: dict[str, np.ndarray]) -> list[Episode]:
    """Episodes of chained transitions: ``t`` continues in the first later transition whose observation is
    ``t``'s next observation (envs interleave in a buffer), unless ``t`` terminated."""
    obs = stored["observation"]
    waiting: dict[bytes, list[int]] = {}
    for index in range(len(obs)):
        waiting.setdefault(obs[index].tobytes(), []).append(index)
    used = np.zeros(len(obs), dtype=bool)
    return [_episode(stored, _follow(stored, start, waiting, used)) for start in range(len(obs)) if not used[start]]


def _follow(stored: dict[str, np.ndarray], start: int, waiting: dict[bytes, list[int]], used: np.ndarray) -> list[int]:
    """The rows of the chain from ``start`` (marked ``used``): each next row is the first unused later one
    whose observation (found in ``waiting``, by bytes) is this row's next observation."""
    chain, index = [], start
    while True:
        used[index] = True
        chain.append(index)
        if stored["terminated"][index]:
            return chain
        candidates = waiting.get(stored["next_observation"][index].tobytes(), [])
        following = next((c for c in candidates if c > index and not used[c]), None)
        if following is None:
            return chain
        index = following


def _episode(stored: dict[str, np.ndarray], chain: list[int]) -> Episode:
    """The transitions at rows ``chain`` as one episode, truncated where it ends without a termination."""
    rows = np.asarray(chain)
    terminated = stored["terminated"][rows].astype(bool)
    ends = np.zeros(len(rows), dtype=bool)
    ends[-1] = not terminated[-1]
    return {
        "observations": np.concatenate([stored["observation"][rows], stored["next_observation"][rows[-1:]]]),
        "actions": stored["action"][rows],
        "rewards": stored["reward"][rows].astype(np.float64),
        "terminations": terminated,
        "truncations": ends,
    }
