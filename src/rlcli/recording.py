"""Datasets made from trained runs (``rlcli collect``): a policy played on its env, with the run's
observation normalization applied when acting and raw observations stored, or a run's saved replay
buffer. Both are written as Minari datasets (:func:`rlcli.datasets.write_dataset`)."""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from rlcli import checkpoint, observations
from rlcli.config.errors import InputError
from rlcli.config.load import load_config
from rlcli.datasets import datasets_root, import_minari
from rlcli.devices import resolve_device
from rlcli.envs import check_run_packages, import_env_packages, make_env
from rlcli.playback import restored_agent

Progress = Callable[[int, int], None]
"""Called with (steps done, steps planned) as a recording goes."""


@dataclass(frozen=True)
class Recorded:
    """What :func:`record_policy` or :func:`record_replay` wrote."""

    path: Path
    steps: int
    episodes: int
    return_mean: float
    source: Path

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "steps": self.steps,
            "episodes": self.episodes,
            "return_mean": self.return_mean,
            "source": str(self.source),
        }


def record_policy(
    path: str | Path,
    *,
    steps: int,
    out: str,
    deterministic: bool = True,
    epsilon: float = 0.0,
    noise: float = 0.0,
    seed: int = 0,
    overwrite: bool = False,
    device: str | None = None,
    env_packages: Sequence[str] = (),
    progress: Progress | None = None,
) -> Recorded:
    """Play the policy of the run folder or checkpoint ``path`` for ``steps`` env steps and write them as
    the Minari dataset ``out``.

    Acting: the policy's mode (``deterministic``) or a sample; then, for Box actions, Gaussian noise of
    ``noise`` half-ranges, and with probability ``epsilon`` a uniformly random action instead; clipped to
    the bounds. The episode in progress when ``steps`` is reached ends there, truncated.

    Raises:
        InputError: ``path`` is not a run, the output exists (without ``overwrite``), noise on Discrete
            actions, minari is missing, or the disk is full.
        CheckpointError: a damaged checkpoint, or one that does not fit its config.
    """

    import_minari("rlcli collect")
    folder, weights = checkpoint.find_checkpoint(Path(path))
    check_run_packages(folder, list(env_packages))
    import_env_packages(list(env_packages))
    config_file = folder / "config.toml"
    cfg = load_config(config_file)
    source = str(config_file)
    target = resolve_device(device if device is not None else cfg.run.device, source=source)
    agent = restored_agent(cfg, weights, target, render=False, source=source)
    env = make_env(cfg.env, source=source)
    try:
        if noise > 0 and not isinstance(env.action_space, spaces.Box):
            raise InputError(
                "--noise",
                f"{cfg.env.id} has {env.action_space} actions: Gaussian noise needs Box actions; use --epsilon",
            )
        episodes = _play(
            env,
            agent,
            steps=steps,
            deterministic=deterministic,
            epsilon=epsilon,
            noise=noise,
            seed=seed,
            device=target,
            progress=progress,
        )
        spec = env.spec
    finally:
        env.close()
    mode = "deterministic" if deterministic else "stochastic"
    written = write_dataset(
        out,
        episodes,
        env_spec=spec,
        algorithm=f"rlcli {cfg.algo.name}",
        description=f"{cfg.algo.name} policy of {folder} ({weights.name}), {mode}, noise {noise}, "
        f"epsilon {epsilon}, seed {seed}",
        overwrite=overwrite,
    )
    returns = [float(np.sum(e["rewards"])) for e in episodes]
    return Recorded(written, steps, len(episodes), float(np.mean(returns)), weights)


def _play(
    env: gym.Env,
    agent,
    *,
    steps: int,
    deterministic: bool,
    epsilon: float,
    noise: float,
    seed: int,
    device: torch.device,
    progress: Progress | None,
) -> list[dict]:
    """``steps`` steps of ``agent`` on ``env``, as episodes (the last cut by truncation)."""
    space = env.action_space
    space.seed(seed)
    rng = np.random.default_rng(seed)
    generator = torch.Generator(device=device).manual_seed(seed)
    bounds = (space.low, space.high) if isinstance(space, spaces.Box) else None
    episodes: list[dict] = []
    obs, _ = env.reset(seed=seed)
    current = _new_episode(obs)
    for done_steps in range(1, steps + 1):
        batch = observations.batch_tensor(env.observation_space, [obs], device)
        action = agent.actions(batch, deterministic=deterministic, generator=generator)[0].cpu().numpy()
        if bounds is not None:
            if noise > 0:
                action = action + noise * (bounds[1] - bounds[0]) / 2 * rng.standard_normal(action.shape)
            action = np.clip(action, *bounds).astype(space.dtype)
        if epsilon > 0 and rng.random() < epsilon:
            action = space.sample()
        obs, reward, terminated, truncated, _ = env.step(action)
        for key, value in (
            ("observations", obs),
            ("actions", action),
            ("rewards", reward),
            ("terminations", terminated),
            ("truncations", truncated),
        ):
            current[key].append(value)
        last = done_steps == steps
        if terminated or truncated or last:
            if last and not (terminated or truncated):
                current["truncations"][-1] = True
            episodes.append(_arrays(current))
            if not last:
                obs, _ = env.reset()
                current = _new_episode(obs)
        if progress is not None and (done_steps % 1000 == 0 or last):
            progress(done_steps, steps)
    return episodes


def _new_episode(obs) -> dict[str, list]:
    return {"observations": [obs], "actions": [], "rewards": [], "terminations": [], "truncations": []}


def _arrays(episode: dict[str, list]) -> dict[str, Any]:
    observed = episode["observations"]
    stacked = observations.stack(observed)
    return {
        "observations": stacked,
        "actions": np.stack(episode["actions"]),
        "rewards": np.asarray(episode["rewards"], dtype=np.float64),
        "terminations": np.asarray(episode["terminations"], dtype=bool),
        "truncations": np.asarray(episode["truncations"], dtype=bool),
    }


def record_replay(path: str | Path, *, out: str, overwrite: bool = False, env_packages: Sequence[str] = ()) -> Recorded:
    """Write the replay buffer saved with a checkpoint as the Minari dataset ``out`` (a "replay" dataset, as
    D4RL's medium-replay). ``path`` is a run folder (its newest checkpoint) or a checkpoint file in its
    ``checkpoints/``.

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
    latest = path if path.is_file() else checkpoint.Checkpoints(folder, 1).latest()
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
    returns = [float(np.sum(e["rewards"])) for e in episodes]
    return Recorded(written, sum(len(e["rewards"]) for e in episodes), len(episodes), float(np.mean(returns)), latest)


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


def _chain(stored: dict[str, np.ndarray]) -> list[dict]:
    """Episodes of chained transitions: ``t`` continues in the first later transition whose observation is
    ``t``'s next observation (envs interleave in a buffer), unless ``t`` terminated."""
    obs, next_obs = stored["observation"], stored["next_observation"]
    waiting: dict[bytes, list[int]] = {}
    for index in range(len(obs)):
        waiting.setdefault(obs[index].tobytes(), []).append(index)
    used = np.zeros(len(obs), dtype=bool)
    episodes = []
    for start in range(len(obs)):
        if used[start]:
            continue
        chain, index = [], start
        while True:
            used[index] = True
            chain.append(index)
            if stored["terminated"][index]:
                break
            candidates = waiting.get(next_obs[index].tobytes(), [])
            following = next((c for c in candidates if c > index and not used[c]), None)
            if following is None:
                break
            index = following
        rows = np.asarray(chain)
        ends = np.zeros(len(rows), dtype=bool)
        terminated = stored["terminated"][rows].astype(bool)
        ends[-1] = not terminated[-1]
        episodes.append(
            {
                "observations": np.concatenate([obs[rows], next_obs[rows[-1:]]]),
                "actions": stored["action"][rows],
                "rewards": stored["reward"][rows].astype(np.float64),
                "terminations": terminated,
                "truncations": ends,
            }
        )
    return episodes


class _Uniform:
    """An agent of uniformly random actions (its own seeded space): a dataset's random baseline."""

    def __init__(self, space: spaces.Space, seed: int):
        self.space = space
        self.space.seed(seed)

    def actions(self, observation, *, deterministic: bool, generator) -> torch.Tensor:
        return torch.as_tensor(np.stack([self.space.sample() for _ in range(observation.shape[0])]))


def record_random(env_cfg, *, steps: int, out: str, seed: int = 0, overwrite: bool = False) -> Recorded:
    """Write ``steps`` steps of uniformly random actions on the env of ``env_cfg`` (an EnvConfig) as the
    Minari dataset ``out``: the random baseline of a normalized score, and a stand-in dataset for the bench."""

    env = make_env(env_cfg)
    try:
        episodes = _play(
            env,
            _Uniform(env.action_space, seed),
            steps=steps,
            deterministic=False,
            epsilon=0.0,
            noise=0.0,
            seed=seed,
            device=torch.device("cpu"),
            progress=None,
        )
        spec = env.spec
    finally:
        env.close()
    written = write_dataset(
        out,
        episodes,
        env_spec=spec,
        algorithm="uniform random actions",
        description=f"uniformly random actions, seed {seed}",
        overwrite=overwrite,
    )
    returns = [float(np.sum(e["rewards"])) for e in episodes]
    return Recorded(written, steps, len(episodes), float(np.mean(returns)), Path(env_cfg.id))


Episode = dict[str, Any]
"""One episode to write: ``observations`` ([L + 1, ...], a dict of arrays for a Dict space),
``actions`` [L, ...], ``rewards`` [L], ``terminations`` and ``truncations`` [L] bool."""


def target(out: str) -> tuple[Path, str]:
    """(root, id) of where ``out`` writes: a Minari id under :func:`datasets_root`, or a path (one holding a
    separator, or starting with ``.`` or ``~``) whose last part is the id and whose parent is the root."""
    if os.sep in out and (out.startswith((".", "~", os.sep)) or Path(out).expanduser().parent.exists()):
        path = Path(out).expanduser().absolute()
        return path.parent, path.name
    return datasets_root(), out


def write_dataset(
    out: str,
    episodes: list[Episode],
    *,
    env_spec: Any,
    algorithm: str,
    description: str,
    overwrite: bool = False,
    what: str = "--out",
) -> Path:
    """Write ``episodes`` as the Minari dataset ``out`` (an id or a path, see :func:`target`); returns its folder.

    The dataset is written in a hidden folder beside its place and moved there when complete, so that an
    interruption or a full disk leaves no half-written dataset (the hidden folder is removed).

    Raises:
        InputError: minari is missing, ``out`` exists (without ``overwrite``) or is not a valid id, or the
            disk is full or not writable.
    """
    minari = import_minari(what)
    from minari.data_collector import EpisodeBuffer
    from minari.dataset.minari_dataset import parse_dataset_id

    root, dataset_id = target(out)
    try:
        parse_dataset_id(dataset_id)
    except Exception as exc:  # noqa: BLE001 - minari's own check of the id's form
        raise InputError(
            what, f"{dataset_id!r} is not a Minari dataset id ([namespace/]name-vN, such as pendulum/expert-v0): {exc}"
        ) from None
    final = root / dataset_id
    if final.exists() and not overwrite:
        raise InputError(what, f"{final} already exists; choose another id, or pass --overwrite to replace it")
    check_disk(root, episodes, what=what)
    buffers = [
        EpisodeBuffer(
            observations=e["observations"],
            actions=e["actions"],
            rewards=e["rewards"],
            terminations=e["terminations"],
            truncations=e["truncations"],
            infos={},
        )
        for e in episodes
    ]
    staging = None
    previous = os.environ.get("MINARI_DATASETS_PATH")
    try:
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".rlcli-partial-", dir=root))
        os.environ["MINARI_DATASETS_PATH"] = str(staging)
        with warnings.catch_warnings():
            # Minari asks for an author, an e-mail and a code link: rlcli has none to give.
            warnings.simplefilter("ignore", UserWarning)
            minari.create_dataset_from_buffers(
                dataset_id, buffers, env=env_spec, algorithm_name=algorithm, description=description
            )
        _replace(staging / dataset_id, final)
    # h5py reports a failed write as an OSError or a RuntimeError (a full disk, a file-size limit).
    except (OSError, RuntimeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0][:200]
        raise InputError(
            what,
            f"cannot write the dataset {final}: {reason}; nothing was written "
            "(check the free space and permissions of the folder)",
        ) from None
    finally:
        if previous is None:
            os.environ.pop("MINARI_DATASETS_PATH", None)
        else:
            os.environ["MINARI_DATASETS_PATH"] = previous
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return final


def check_disk(root: Path, episodes: list[Episode], *, what: str = "--out") -> None:
    """Raise an InputError, before anything is written, when the disk holding ``root`` has less free space
    than the episodes' arrays need (with a fifth more for the file's own structure)."""
    needed = int(1.2 * sum(_nbytes(value) for episode in episodes for value in episode.values())) + 2**20
    folder = root
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    if needed > free:
        from rlcli.replay.storage import human_bytes

        raise InputError(
            what,
            f"the dataset needs about {human_bytes(needed)} but {folder} has only "
            f"{human_bytes(free)} free; nothing was written",
        )


def _nbytes(value: Any) -> int:
    return sum(_nbytes(v) for v in value.values()) if isinstance(value, dict) else np.asarray(value).nbytes


def _replace(new: Path, final: Path) -> None:
    """Move the complete dataset ``new`` to ``final``; an existing ``final`` is moved aside first and
    removed only once the new one is in place."""
    final.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if final.exists():
        old = final.with_name(f".rlcli-old-{final.name}-{os.getpid()}")
        final.rename(old)
    new.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
