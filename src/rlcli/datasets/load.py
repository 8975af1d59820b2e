"""Reading a Minari dataset into a :class:`~rlcli.datasets.dataset.Dataset`: opening it, checking it
fits in memory and matches the config's env, copying its episodes into preallocated tensors; and the
random stand-in that ``rlcli validate --build`` builds an offline run on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from gymnasium import spaces

from rlcli import observations
from rlcli.config.errors import InputError, single
from rlcli.datasets.dataset import Dataset, allocate, dataset_bytes
from rlcli.datasets.find import DatasetNotFound, import_minari, resolve
from rlcli.envs import describe_space

if TYPE_CHECKING:
    from rlcli.config.sources import DataConfig


@dataclass
class DatasetFile:
    """A Minari dataset opened but not read: what its metadata says."""

    name: str
    path: Path
    storage: Any
    steps: int
    episodes: int
    observation_space: spaces.Space
    action_space: spaces.Space
    env_spec: Any

    @property
    def env_id(self) -> str | None:
        return None if self.env_spec is None else self.env_spec.id


def open_dataset(name: str, *, what: str = "data.dataset") -> DatasetFile:
    """Open the Minari dataset ``name`` (an id or a path, see :func:`resolve`) and read its metadata.

    Raises:
        InputError: minari is missing, there is no such dataset, or it is not a readable Minari dataset.
    """
    import_minari(what)
    data_path = resolve(name, what=what)
    from minari.dataset.minari_storage import MinariStorage

    try:
        storage = MinariStorage.read(data_path)
        metadata = storage.metadata
        steps, episodes = int(metadata["total_steps"]), int(metadata["total_episodes"])
    except Exception as exc:  # noqa: BLE001 - whatever a damaged file raises is bad input
        raise InputError(
            what,
            f"{data_path} cannot be read as a Minari dataset: {type(exc).__name__}: "
            f"{(str(exc).splitlines() or [''])[0][:200]}",
        ) from None
    return DatasetFile(
        name, data_path, storage, steps, episodes, storage.observation_space, storage.action_space, _env_spec(metadata)
    )


def load_dataset(opened: DatasetFile, *, what: str = "data.dataset") -> Dataset:
    """Read an opened dataset into a :class:`Dataset` (call :func:`rlcli.algos.check_spaces` on its spaces
    first: only spaces rlcli reads can be loaded).

    The memory it needs is checked against what is free before anything is allocated; each episode
    is copied once into preallocated tensors.

    Raises:
        InputError: it would not fit in memory, or it is damaged (episodes that do not fit their
            metadata or spaces).
    """
    name, steps, episodes = opened.name, opened.steps, opened.episodes
    check_memory(name, opened.observation_space, opened.action_space, steps=steps, episodes=episodes, what=what)
    dataset = allocate(
        name, opened.path, opened.observation_space, opened.action_space, steps, episodes, opened.env_spec
    )
    try:
        _fill(dataset, opened.storage.get_episodes(range(episodes)), steps=steps, episodes=episodes)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged episode
        raise InputError(
            what, f"{opened.path} is damaged: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
        ) from None
    return dataset


def stand_in(name: str, observation_space: spaces.Space, action_space: spaces.Space, *, steps: int = 2) -> Dataset:
    """One seeded episode of random transitions on these spaces, no file behind it (validate --build's)."""
    dataset = allocate(name, Path(name), observation_space, action_space, steps, 1, None)
    observation_space.seed(0), action_space.seed(0)
    observations.write(
        observations.numpy_view(dataset.observations),
        slice(0, steps + 1),
        observations.stack([observation_space.sample() for _ in range(steps + 1)]),
    )
    dataset.actions.copy_(
        torch.as_tensor(np.stack([action_space.sample() for _ in range(steps)])).reshape(dataset.actions.shape)
    )
    dataset.rewards.copy_(torch.linspace(-1.0, 1.0, steps))
    dataset.terminated.zero_()
    dataset.truncated.copy_(torch.arange(steps) == steps - 1)
    dataset.rows.copy_(torch.arange(steps))
    dataset.episode_ends.fill_(steps)
    dataset.stand_in = True
    return dataset


def check_memory(
    name: str,
    observation_space: spaces.Space,
    action_space: spaces.Space,
    *,
    steps: int,
    episodes: int,
    what: str = "data.dataset",
) -> None:
    """Raise an InputError, before anything is allocated, when the dataset would not fit in free memory."""
    from rlcli.replay.storage import free_memory, human_bytes

    needed = dataset_bytes(observation_space, action_space, steps=steps, episodes=episodes)
    free = free_memory(torch.device("cpu"))
    if free is not None and needed > free:
        raise InputError(
            what,
            f"{name!r} holds {steps:,} transitions, which need {human_bytes(needed)} of memory, "
            f"but only {human_bytes(free)} is free",
        )


def _env_spec(metadata: dict) -> Any:
    """The gymnasium EnvSpec the dataset records, or None."""
    from gymnasium.envs.registration import EnvSpec

    text = metadata.get("env_spec")
    if not isinstance(text, str):
        return None
    try:
        return EnvSpec.from_json(text)
    except Exception:  # noqa: BLE001 - a spec from another gymnasium version: no env to recover
        return None


def _fill(dataset: Dataset, stored, *, steps: int, episodes: int) -> None:
    """Copy each of the ``episodes`` stored episodes into ``dataset``'s tensors."""
    obs_view = observations.numpy_view(dataset.observations)
    actions, rewards = dataset.actions.numpy(), dataset.rewards.numpy()
    terminated, truncated, ends = dataset.terminated.numpy(), dataset.truncated.numpy(), dataset.episode_ends.numpy()
    rows = dataset.rows.numpy()
    step = row = count = 0
    for episode in stored:
        length = len(episode["rewards"])
        if step + length > steps or count >= episodes:
            raise InputError(
                "data.dataset", f"{dataset.path} is damaged: its episodes hold more steps than its metadata's {steps:,}"
            )
        observed = episode["observations"]
        got = len(next(iter(observed.values()))) if isinstance(observed, dict) else len(observed)
        if got != length + 1 or len(episode["actions"]) != length:
            raise InputError(
                "data.dataset",
                f"{dataset.path} is damaged: episode {count} has {length} rewards, "
                f"{len(episode['actions'])} actions and {got} observations "
                f"(a Minari episode has one observation more than steps)",
            )
        observations.write(obs_view, slice(row, row + length + 1), observed)
        actions[step : step + length] = np.asarray(episode["actions"]).reshape(actions[step : step + length].shape)
        rewards[step : step + length] = episode["rewards"]
        terminated[step : step + length] = episode["terminations"]
        truncated[step : step + length] = episode["truncations"]
        rows[step : step + length] = np.arange(row, row + length)
        step += length
        row += length + 1
        ends[count] = step
        count += 1
    if step != steps or count != episodes:
        raise InputError(
            "data.dataset",
            f"{dataset.path} is damaged: {count:,} episodes of {step:,} steps, where "
            f"its metadata says {episodes:,} of {steps:,}",
        )


def check_env(
    dataset: DatasetFile, env_id: str, observation_space: spaces.Space, action_space: spaces.Space, source: str | None
) -> None:
    """Raise a ConfigError unless the config's env (``env_id``, whose spaces are given) is the dataset's:
    the env its spec records, and the same spaces. The config's env is what evaluation plays."""
    if dataset.env_id is not None and dataset.env_id != env_id:
        raise single(
            source,
            f"dataset {dataset.name!r} was collected on {dataset.env_id} (its env spec), but "
            f'env.id is {env_id}; set env.id = "{dataset.env_id}"',
            path="env.id",
        )
    for role, mine, theirs in (
        ("observation", observation_space, dataset.observation_space),
        ("action", action_space, dataset.action_space),
    ):
        if not _same_space(mine, theirs):
            raise single(
                source,
                f"dataset {dataset.name!r} has {role} space {describe_space(theirs)}, but {env_id} "
                f"has {describe_space(mine)}: the dataset was not collected on this env",
                path="data.dataset",
            )


def _same_space(a: spaces.Space, b: spaces.Space) -> bool:
    if isinstance(a, spaces.Box) and isinstance(b, spaces.Box):
        # Bounds may differ in dtype (float32 in the env, float64 in a file): compare their values.
        return (
            a.shape == b.shape
            and np.dtype(a.dtype) == np.dtype(b.dtype)
            and np.allclose(a.low, b.low, equal_nan=True)
            and np.allclose(a.high, b.high, equal_nan=True)
        )
    return a == b


def open_for_run(data: DataConfig | None, *, stand_in_data: bool = False) -> DatasetFile | None:
    """The offline run's dataset, opened; None online (``data`` None), or when ``stand_in_data`` and it is
    not on this machine."""
    if data is None:
        return None
    try:
        return open_dataset(data.dataset)
    except DatasetNotFound:
        if stand_in_data:
            return None
        raise


def load_for_run(
    data: DataConfig | None, opened: DatasetFile | None, observation_space: spaces.Space, action_space: spaces.Space
) -> Dataset | None:
    """The offline run's data in memory (a stand-in on these spaces when its file is not here); None online."""
    if data is None:
        return None
    return load_dataset(opened) if opened is not None else stand_in(data.dataset, observation_space, action_space)


def dataset_placement(data: DataConfig, dataset: Dataset, device: torch.device, source: str | None) -> torch.device:
    """Where the dataset's tensors go (``[data] device``); a ConfigError when the training device has too
    little free memory for them."""
    from rlcli.replay.storage import free_memory, human_bytes

    if data.device == "cpu" or device.type == "cpu":
        return torch.device("cpu")
    free = free_memory(device)
    if free is not None and dataset.nbytes > free:
        raise single(
            source,
            f"dataset {dataset.name!r} needs {human_bytes(dataset.nbytes)} of {device} memory, but "
            f'only {human_bytes(free)} is free; set data.device = "cpu"',
            path="data.device",
        )
    return device
