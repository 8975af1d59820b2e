"""Offline data: Minari datasets read into preallocated tensors (:func:`load_dataset`), and the
:class:`DatasetSource` that feeds an offline run's loop in place of the collector.

A Minari episode of ``L`` steps stores ``L + 1`` observations (the last is the one its final step
reached) and ``L`` actions, rewards, terminations and truncations. rlcli keeps that layout: every
observation once, in the space's own dtype, and for each transition the row of its observation;
the next observation is the row after it. ``terminated`` and ``truncated`` stay apart, so that a
truncated episode's last step still bootstraps.

``minari`` is the ``minari`` extra (Python 3.11 and newer): only this module imports it, and only
when a run reads or writes a dataset.
"""

from __future__ import annotations

import difflib
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from gymnasium import spaces

from rlcli import observations
from rlcli.config.errors import InputError, single
from rlcli.envs import describe_space

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.timing import Timer

EXTRA = "minari"
"""The extra that installs minari (with h5py)."""


class DatasetNotFound(InputError):
    """No dataset by that name: neither a path nor an id under :func:`datasets_root`."""


def import_minari(what: str) -> Any:
    """The ``minari`` module; an InputError naming the extra when it is not installed.

    ``what`` names what needs it (``data.dataset``, ``rlcli collect``).
    """
    try:
        import minari
    except ImportError as exc:
        hint = " (minari needs Python 3.11 or newer)" if sys.version_info < (3, 11) else ""
        raise InputError(
            what,
            f"datasets are read and written with minari, which is not installed{hint}: "
            f"pip install 'rlcli[{EXTRA}]' ({type(exc).__name__}: {exc})",
        ) from None
    return minari


def datasets_root() -> Path:
    """Where minari keeps datasets by id: ``MINARI_DATASETS_PATH``, else ``~/.minari/datasets``."""
    configured = os.environ.get("MINARI_DATASETS_PATH")
    return Path(configured).expanduser() if configured else Path.home() / ".minari" / "datasets"


def resolve(name: str, *, what: str = "data.dataset") -> Path:
    """The data folder (the one holding ``metadata.json``) of the dataset ``name``: a path to a dataset
    folder or to its ``data/`` folder, or a Minari id under :func:`datasets_root`.

    Raises:
        InputError: nothing there; names where it looked and the close ids found.
    """
    path = Path(name).expanduser()
    for candidate in (path / "data", path):
        if (candidate / "metadata.json").is_file():
            return candidate
    root = datasets_root()
    by_id = root / name / "data"
    if (by_id / "metadata.json").is_file():
        return by_id
    if path.exists():
        raise InputError(
            what, f"{name!r} is not a Minari dataset: {path} holds no metadata.json (nor data/metadata.json)"
        )
    known = local_ids(root)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = (
        f"; did you mean {', '.join(repr(c) for c in close)}?"
        if close
        else f"; datasets there: {', '.join(known[:8])}" + (" ..." if len(known) > 8 else "")
        if known
        else "; none are there (minari download <id>, or rlcli collect, puts one there)"
    )
    raise DatasetNotFound(
        what,
        f"no dataset {name!r}: not a path to a dataset folder, and not an id under "
        f"{root} (MINARI_DATASETS_PATH{' is set' if 'MINARI_DATASETS_PATH' in os.environ else ' unset'})" + hint,
    )


def local_ids(root: Path) -> list[str]:
    """The ids of the datasets under ``root`` (folders holding ``data/metadata.json``), sorted."""
    if not root.is_dir():
        return []
    return sorted(str(meta.parent.parent.relative_to(root)) for meta in root.glob("**/data/metadata.json"))


@dataclass
class Dataset:
    """A dataset's transitions in memory, on the CPU.

    ``observations`` holds every episode's observations, its last included ([R, *obs] in the space's
    dtype; a TensorDict for a Dict space); transition ``i`` starts at row ``rows[i]`` and reaches row
    ``rows[i] + 1``. ``actions`` [N, *act] (float32 for Box, int64 for Discrete), ``rewards`` [N]
    float32, ``terminated`` and ``truncated`` [N] bool; ``episode_ends`` [E] int64, the transition
    index after each episode's last.
    """

    name: str
    path: Path
    observations: Any
    rows: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    episode_ends: torch.Tensor
    observation_space: spaces.Space
    action_space: spaces.Space
    env_id: str | None
    """The id of the env the data came from, from the dataset's env spec (None when it has none)."""
    env_spec: Any = None
    stand_in: bool = False  # True for stand_in()'s random transitions, which no file holds

    @property
    def transitions(self) -> int:
        return int(self.rows.shape[0])

    @property
    def episodes(self) -> int:
        return int(self.episode_ends.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of every tensor held."""
        tensors = [self.rows, self.actions, self.rewards, self.terminated, self.truncated, self.episode_ends]
        obs = self.observations
        obs_bytes = (
            obs.numel() * obs.element_size()
            if isinstance(obs, torch.Tensor)
            else sum(v.numel() * v.element_size() for v in obs.values())
        )
        return obs_bytes + sum(t.numel() * t.element_size() for t in tensors)

    def episode_returns(self) -> torch.Tensor:
        """[E] float64: the undiscounted return of each episode."""
        episode = torch.repeat_interleave(torch.arange(self.episodes), self._lengths())
        return torch.zeros(self.episodes, dtype=torch.float64).index_add_(0, episode, self.rewards.double())

    def _lengths(self) -> torch.Tensor:
        return torch.diff(self.episode_ends, prepend=self.episode_ends.new_zeros(1))

    def padded(self, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``values`` ([N]) laid out as ``[L, E]`` (time-major, one column per episode, L its longest),
        with the mask of the real steps."""
        lengths = self._lengths()
        episode = torch.repeat_interleave(torch.arange(self.episodes), lengths)
        start = (self.episode_ends - lengths)[episode]
        step = torch.arange(self.transitions) - start
        longest = int(lengths.max()) if self.episodes else 0
        out = values.new_zeros(longest, self.episodes)
        mask = torch.zeros(longest, self.episodes, dtype=torch.bool)
        out[step, episode] = values
        mask[step, episode] = True
        return out, mask


def _leaf_bytes(space: spaces.Space) -> int:
    found = observations.leaves(space)
    pairs = found.values() if isinstance(found, dict) else [found]
    return sum(math.prod(shape) * torch.empty((), dtype=dtype).element_size() for shape, dtype in pairs)


def _action_leaf(space: spaces.Space) -> tuple[tuple[int, ...], torch.dtype]:
    if isinstance(space, spaces.Discrete):
        return (), torch.int64
    return tuple(space.shape), torch.float32


def dataset_bytes(observation_space: spaces.Space, action_space: spaces.Space, *, steps: int, episodes: int) -> int:
    """Bytes :func:`load_dataset` allocates for ``steps`` transitions in ``episodes`` episodes."""
    shape, dtype = _action_leaf(action_space)
    action = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
    # rows (int64), reward (float32), two flags; episode ends (int64).
    return (steps + episodes) * _leaf_bytes(observation_space) + steps * (action + 8 + 4 + 2) + episodes * 8


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
    dataset = _allocate(
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
    dataset = _allocate(name, Path(name), observation_space, action_space, steps, 1, None)
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


def _allocate(
    name: str, path: Path, obs_space: spaces.Space, act_space: spaces.Space, steps: int, episodes: int, env_spec: Any
) -> Dataset:
    shape, dtype = _action_leaf(act_space)
    return Dataset(
        name=name,
        path=path,
        observations=observations.host_buffer(obs_space, (steps + episodes,)),
        rows=torch.empty(steps, dtype=torch.int64),
        actions=torch.empty(steps, *shape, dtype=dtype),
        rewards=torch.empty(steps, dtype=torch.float32),
        terminated=torch.empty(steps, dtype=torch.bool),
        truncated=torch.empty(steps, dtype=torch.bool),
        episode_ends=torch.empty(episodes, dtype=torch.int64),
        observation_space=obs_space,
        action_space=act_space,
        env_id=None if env_spec is None else env_spec.id,
        env_spec=env_spec,
    )


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


class DatasetSource:
    """The data source of an offline run: no envs, progress counted in gradient steps.

    Each :meth:`collect` returns an empty batch whose size is the iteration's gradient steps; the
    algorithm draws its minibatches from the dataset itself (its replay is the dataset). The return
    column reads ``episodes``: the in-training evaluation's.
    """

    unit = "gradient steps"

    def __init__(self, dataset: Dataset, *, steps_per_iteration: int, episodes):
        from tensordict import TensorDict

        self.dataset = dataset
        self.per_iteration = steps_per_iteration
        self.frames = 0
        self.observation_space, self.action_space = dataset.observation_space, dataset.action_space
        self.episodes = episodes
        self.batch = TensorDict({}, batch_size=[steps_per_iteration])

    def collect(self, timer: Timer) -> TensorDict:
        """The iteration's ticket: an empty batch of ``steps_per_iteration`` rows."""
        self.frames += self.per_iteration
        return self.batch

    def state_dict(self) -> dict:
        return {"frames": self.frames, "episodes": int(self.episodes.episode_count)}

    def load_state_dict(self, state: dict) -> bool:
        self.frames = state["frames"]
        self.episodes.episode_count = state["episodes"]
        return True

    def close(self) -> None:
        """Nothing to close: the evaluation's envs belong to the run's evaluator."""
