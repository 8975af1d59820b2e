"""``build_run``: the one place where a config's components meet."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch
from gymnasium import spaces

from rlcli.algos import ALGORITHMS, Algorithm, check_spaces
from rlcli.build_context import BuildContext
from rlcli.collectors import Collector
from rlcli.config.errors import ConfigError, ConfigIssue, folder_error, single
from rlcli.config.ranks import rank_config, rank_problems
from rlcli.config.schema import RunConfig
from rlcli.datasets import (
    Dataset,
    DatasetFile,
    DatasetNotFound,
    DatasetSource,
    check_env,
    datasets_root,
    load_dataset,
    open_dataset,
    stand_in,
)
from rlcli.devices import resolve_device
from rlcli.distributed import Group, Single, from_environment, launched, local_rank
from rlcli.envs import describe_space, make_envs
from rlcli.evaluation import SEED_OFFSET, Evaluator
from rlcli.loggers import check_backends
from rlcli.models.compile import compile_networks
from rlcli.models.encoders import describe, is_image, named_encoders
from rlcli.replay.storage import free_memory, human_bytes

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.timing import Timer


class RunFolder:
    """``<output_dir>/<name>-<timestamp>``, created the first time :attr:`path` is read.

    Components that keep files (memmap replay storage) and the trainer share it;
    building a run alone (``validate --build``) creates nothing on disk.
    """

    def __init__(self, output_dir: str | Path, name: str):
        self.output_dir, self.name = output_dir, name
        self._path: Path | None = None

    @property
    def created(self) -> bool:
        return self._path is not None

    def use(self, path: Path) -> None:
        """Make the existing folder ``path`` this run's (a resumed run continues in its own folder)."""
        self._path = Path(path)

    @property
    def path(self) -> Path:
        """The folder, made now if it does not exist yet (suffixed when the second is taken).

        Raises:
            InputError: the folder cannot be created; the message names ``--out`` and ``run.output_dir``.
        """
        if self._path is None:
            stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
            base = Path(self.output_dir).expanduser() / f"{self.name}-{stamp}"
            candidate, suffix = base, 1
            while self._path is None:
                try:
                    candidate.mkdir(parents=True)
                    self._path = candidate
                except FileExistsError:
                    suffix += 1
                    candidate = base.with_name(f"{base.name}-{suffix}")
                except OSError as exc:
                    raise folder_error(self.output_dir, exc) from None
        return self._path


class Episodes(Protocol):
    """Finished episodes as gymnasium's ``RecordEpisodeStatistics`` counts them: how many so far,
    and the returns and lengths of the newest (``return_queue.maxlen`` of them)."""

    episode_count: int
    return_queue: deque
    length_queue: deque


class Source(Protocol):
    """Where a run's batches come from: the :class:`~rlcli.collectors.Collector` (envs, online) or a
    :class:`~rlcli.datasets.DatasetSource` (a dataset, offline). The loop asks it for a batch, hands the
    batch to the algorithm's ``learn`` and counts its progress; checkpoints save its state.
    """

    unit: str
    """What ``frames`` counts, for people: "frames" (env steps) or "gradient steps"."""
    per_iteration: int
    """Progress one iteration of this rank makes."""
    frames: int
    """Progress so far (every rank's): env steps online, gradient steps offline."""
    observation_space: spaces.Space
    action_space: spaces.Space
    episodes: Episodes
    """The episodes the return column reads: the training envs' online, the evaluation's offline."""

    def collect(self, timer: Timer) -> TensorDict:
        """The next batch: ``[T, N]`` transitions online; offline, an empty one whose size is the
        iteration's gradient steps (the algorithm samples its dataset itself)."""
        ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> bool:
        """Continue from :meth:`state_dict`; returns whether it continues exactly."""
        ...

    def close(self) -> None: ...


@dataclass
class Run:
    """Everything a training run needs, built and wired, nothing started."""

    cfg: RunConfig
    device: torch.device
    source: Source
    algo: Algorithm
    iterations: int
    folder: RunFolder
    phases: tuple[str, ...]
    """Every timed phase in display order: the loop's, with the algorithm's sub-phases after ``update``."""
    metrics: tuple[str, ...]
    """The row keys the algorithm's ``learn`` reports (its module's ``METRICS``)."""
    origin: dict[str, Any] = field(default_factory=dict)
    """What ``run.json`` records of where the run came from: ``overrides``, ``env_packages`` and
    ``config_file`` (its git commit is looked up when training starts, not at build)."""
    evaluator: Evaluator | None = None
    """The in-training evaluation of ``[eval]`` on envs of its own; None when it is off (and on
    every rank but 0)."""
    group: Group = field(default_factory=Single)
    """The ranks of a data-parallel run (one, for a run in one process)."""

    @property
    def planned_frames(self) -> int:
        """Frames (gradient steps, offline) the whole run trains: every rank's, over every iteration."""
        return self.iterations * self.source.per_iteration * self.group.world_size

    def close(self, *, orderly: bool = True) -> None:
        """Close the source's envs and the evaluation's, and leave the group (``orderly``: see
        :meth:`Group.close`)."""
        self.source.close()
        if self.evaluator is not None:
            self.evaluator.close()
        self.group.close(orderly=orderly)


def build_run(
    cfg: RunConfig,
    *,
    source: str | None = None,
    overrides: Sequence[str] = (),
    env_packages: Sequence[str] = (),
    config_file: str | Path | None = None,
    stand_in_data: bool = False,
) -> Run:
    """Build envs, networks, algorithm and collector for ``cfg``.

    ``source`` names the config in errors. ``overrides`` (the command-line changes),
    ``env_packages`` (the modules ``--env-package`` imported) and ``config_file`` (whose
    repository's git commit is recorded) only go into ``run.json``. With ``stand_in_data``, an offline
    run whose dataset is not on this machine is built on a two-step random stand-in with the env's
    spaces (:func:`rlcli.datasets.stand_in`; what ``rlcli validate --build`` checks), never trained.

    Networks are initialised from ``run.seed`` inside a forked RNG, and actions
    and minibatches are drawn from generators of their own, so torch's global
    generator is neither used nor changed. Sets torch's thread count and turns on
    flushing of denormal floats (both process-wide): Adam's second-moment estimates
    of small gradients sink into the denormal range, where CPU arithmetic is
    several times slower (measured: the DQN preset's fused Adam step, 560 -> 47 us).

    Under torchrun (``WORLD_SIZE`` > 1) this process is one rank of a data-parallel run: it
    joins the process group, builds its share of the envs and batches (:func:`rank_config`),
    seeds its envs and generators apart from the other ranks, and takes rank 0's initial
    weights; ``cuda`` means ``cuda:LOCAL_RANK``.

    Raises:
        ConfigError: when the config validates but cannot run here (no CUDA,
            env that fails to make, spaces the algorithm does not support,
            a replay buffer that does not fit, sizes the ranks cannot share).
    """
    device = _rank_device(resolve_device(cfg.run.device, source=source), source)
    check_backends(cfg.logger, source=source)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    problems = rank_problems(cfg, world)
    if problems:
        raise ConfigError(source, [ConfigIssue(message, path=path) for path, message in problems])
    torch.set_num_threads(cfg.run.threads)
    torch.set_flush_denormal(True)
    group = from_environment(device)
    try:
        return _build(
            cfg,
            rank_config(cfg, group.world_size),
            group,
            device,
            source,
            {"overrides": list(overrides), "env_packages": list(env_packages), "config_file": config_file},
            stand_in_data,
        )
    except BaseException:
        group.close(orderly=False)
        raise


def _rank_device(device: torch.device, source: str | None) -> torch.device:
    """``device``, made ``cuda:LOCAL_RANK`` for a rank of a CUDA run started by torchrun."""
    if not launched() or device.type != "cuda":
        return device
    rank = local_rank()
    if rank >= torch.cuda.device_count():
        raise single(
            source,
            f"local rank {rank} has no CUDA device: this machine has "
            f"{torch.cuda.device_count()}; start at most that many ranks per node",
            path="run.device",
        )
    return torch.device("cuda", rank)


def _build(
    cfg: RunConfig,
    local: RunConfig,
    group: Group,
    device: torch.device,
    source: str | None,
    origin: dict[str, Any],
    stand_in_data: bool = False,
) -> Run:
    """The components of one rank, from its share ``local`` of ``cfg``."""
    # Rank r steps the envs that ranks 0..r-1 do not: the seeds one process would give them.
    seed = cfg.run.seed + group.rank * local.env.num_envs
    opened = _open_dataset(cfg, stand_in_data)
    envs = None if cfg.offline else make_envs(local.env, return_window=cfg.run.return_window, source=source)
    folder = RunFolder(cfg.run.output_dir, cfg.run.name)
    # Files of ranks other than 0 (their memmap replay) go to a folder of their own inside the run's.
    rank_folder = (lambda: folder.path) if group.is_main else (lambda: folder.path / f"rank-{group.rank}")
    evaluator = None
    try:
        # Seeded apart from the training envs, as rlcli eval is, so that it never replays their episodes.
        # An offline run always has one: its return column is the evaluation's.
        if (cfg.eval.every_frames or cfg.offline) and group.is_main:
            evaluator = Evaluator(
                None,
                cfg.env,
                episodes=cfg.eval.episodes,
                deterministic=cfg.eval.deterministic,
                seed=cfg.run.seed + SEED_OFFSET,
                device=device,
                source=source,
            )
        if opened is not None:
            check_env(opened, cfg.env.id, evaluator.observation_space, evaluator.action_space, source)
            obs_space, act_space = opened.observation_space, opened.action_space
        elif envs is None:
            obs_space, act_space = evaluator.observation_space, evaluator.action_space
        else:
            obs_space, act_space = envs.single_observation_space, envs.single_action_space
        module = ALGORITHMS[cfg.algo.name]
        check_spaces(
            cfg.algo.name,
            cfg.env.id,
            obs_space,
            act_space,
            source,
            encoder=cfg.network.encoder,
            normalize=cfg.env.normalize_observation,
            offline=cfg.offline,
        )
        dataset = _dataset(cfg, opened, obs_space, act_space)
        ctx = BuildContext(
            obs_space,
            act_space,
            network=cfg.network,
            env=local.env,
            collector=local.collector,
            optim=cfg.optim,
            device=device,
            seed=seed,
            run_folder=rank_folder,
            source=source,
            group=group,
            iterations=local.iterations,
            dataset=dataset,
            dataset_device=None if dataset is None else _dataset_device(cfg, dataset, device, source),
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.run.seed)
            algo = module.build(local.algo, ctx)
        # Every rank starts from rank 0's weights (the same seed gives the same ones; this makes sure).
        group.broadcast(list(algo.agent.state_dict().values()))
        if cfg.run.compile != "off":
            compile_networks(algo.agent, cfg.run.compile)
        if evaluator is not None:
            evaluator.agent = algo.agent
        data_source = (
            DatasetSource(dataset, steps_per_iteration=cfg.data.steps_per_iteration, episodes=evaluator.record)
            if dataset is not None
            else Collector(
                envs,
                algo,
                steps=local.collector.frames_per_batch // local.env.num_envs,
                device=device,
                seed=seed,
                world_size=group.world_size,
            )
        )
    except BaseException:
        if envs is not None:
            envs.close()
        if evaluator is not None:
            evaluator.close()
        raise
    evaluating = ("eval",) if evaluator is not None else ()
    # The gradient all-reduce of a data-parallel run is timed between backward and the optimizer step.
    algo_phases = [
        p
        for phase in module.PHASES
        for p in ((phase, "update.all_reduce") if phase == "update.backward" and group.world_size > 1 else (phase,))
    ]
    phases = ("collect", "collect.policy", "collect.env_step", "update", *algo_phases, *evaluating, "log", "iteration")
    return Run(
        cfg,
        device,
        data_source,
        algo,
        local.iterations,
        folder,
        tuple(dict.fromkeys(phases)),
        tuple(module.METRICS),
        origin,
        evaluator,
        group,
    )


def _dataset(cfg: RunConfig, opened: DatasetFile | None, obs_space: Any, act_space: Any) -> Dataset | None:
    """The offline run's data in memory (a stand-in when its file is not here); None online."""
    if not cfg.offline:
        return None
    return load_dataset(opened) if opened is not None else stand_in(cfg.data.dataset, obs_space, act_space)


def _open_dataset(cfg: RunConfig, stand_in_data: bool) -> DatasetFile | None:
    """The offline run's dataset, opened; None online, or when ``stand_in_data`` and it is not here."""
    if not cfg.offline:
        return None
    try:
        return open_dataset(cfg.data.dataset)
    except DatasetNotFound:
        if stand_in_data:
            return None
        raise


def _dataset_device(cfg: RunConfig, dataset: Dataset, device: torch.device, source: str | None) -> torch.device:
    """Where the dataset's tensors go (``[data] device``); a ConfigError when the training device has too
    little free memory for them."""
    if cfg.data.device == "cpu" or device.type == "cpu":
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


def check_build(cfg: RunConfig, *, source: str | None = None) -> str:
    """Build every component of ``cfg`` without training and close it; returns a one-line summary."""
    run = build_run(cfg, source=source, stand_in_data=True)
    try:
        agent = run.algo.agent
        params = sum(p.numel() for p in agent.parameters())
        space = run.source.observation_space
        encoders = ", ".join(f"{name} {describe(module)}" for name, module in named_encoders(agent))
        normalize = (
            "on"
            if cfg.env.normalize_observation
            else ("off (image: frames are scaled by 1/255)" if is_image(space) else "off")
        )
        return (
            f"{cfg.algo.name} on {cfg.env.id}: observation {describe_space(space)}, action "
            f"{describe_space(run.source.action_space)}, {params:,} parameters, {run.device}; "
            f"encoders: {encoders}; observation normalization {normalize}" + _stand_in_note(run)
        )
    finally:
        run.close()


def _stand_in_note(run: Run) -> str:
    dataset = getattr(run.source, "dataset", None)
    if dataset is None or not dataset.stand_in:
        return ""
    return (
        f"; dataset {dataset.name!r} is not on this machine (not a path, nor an id under {datasets_root()}): "
        "built on a random stand-in with the env's spaces; training needs the dataset (minari download "
        "<id>, rlcli collect, or for the shipped pendulum/* ids python benchmarks/make_datasets.py)"
    )
