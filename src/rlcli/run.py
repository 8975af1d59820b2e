"""``build_run``: the one place where a config's components meet."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import torch
from gymnasium import spaces

from rlcli import observations
from rlcli.algos import ALGORITHMS, Algorithm, Collects, check_run_spaces, uses_masks
from rlcli.algos.context import BuildContext
from rlcli.algos.spec import AlgorithmSpec
from rlcli.collectors.stepper import Collector
from rlcli.config.errors import ConfigError, ConfigIssue, single
from rlcli.config.ranks import rank_config, rank_problems
from rlcli.config.recipes import how_to_get
from rlcli.config.schema import RunConfig
from rlcli.datasets import DatasetFile, DatasetSource, check_env, datasets_root
from rlcli.datasets.load import dataset_placement, load_for_run, open_for_run
from rlcli.envs import describe_space, make_envs
from rlcli.envs.masks import find_masks
from rlcli.loggers import check_backends
from rlcli.models.compile import compile_networks
from rlcli.models.encoders import describe, is_image, named_encoders
from rlcli.models.memory import MemoryCore
from rlcli.models.precision import autocast_networks, bf16_problem
from rlcli.play.evaluation import SEED_OFFSET, Evaluator
from rlcli.runtime.cores import physical_cores
from rlcli.runtime.devices import resolve_device
from rlcli.runtime.distributed import Group, Single, from_environment, launched, local_rank
from rlcli.runtime.threads import ThreadPlan, fixed
from rlcli.runtime.threads import plan as thread_plan
from rlcli.sources import Source
from rlcli.trainer.run_folder import RunFolder


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
    threads: ThreadPlan = field(default_factory=lambda: fixed(1))
    """The torch threads of acting and of the update (``run.threads``); the loop sets them per phase."""

    @property
    def agent(self) -> torch.nn.Module:
        """``algo.agent``, the module every agent is (the ``Agent`` protocol names only what evaluation calls)."""
        assert isinstance(self.algo.agent, torch.nn.Module), "every algorithm's agent is an nn.Module"
        return self.algo.agent

    @property
    def planned_progress(self) -> int:
        """Progress of the whole run, every rank's over every iteration: frames online, gradient steps
        offline (``run.json`` keeps it as ``planned_frames``)."""
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
    generator is neither used nor changed. Leaves torch on the acting threads of ``run.threads``
    (:mod:`rlcli.runtime.threads`; the loop sets each phase's) and turns on flushing of denormal floats
    (both process-wide): Adam's second-moment estimates
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
    _check_threads(cfg, source)
    _check_precision(cfg, device, source)
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
    opened = open_for_run(cfg.data, stand_in_data=stand_in_data)
    envs = None if cfg.offline else make_envs(local.env, return_window=cfg.run.return_window, source=source)
    folder = RunFolder(cfg.run.output_dir, cfg.run.name)
    evaluator = None
    try:
        evaluator = _evaluator(cfg, group, device, source)
        obs_space, act_space = _spaces(cfg, opened, envs, evaluator, source)
        masks = _masks(cfg, local, envs, act_space, seed, source)
        dataset = load_for_run(cfg.data, opened, obs_space, act_space)
        placed = None if dataset is None or cfg.data is None else dataset_placement(cfg.data, dataset, device, source)
        ctx = BuildContext(
            obs_space,
            act_space,
            network=cfg.network,
            env=local.env,
            collector=local.collector,
            optim=cfg.optim,
            device=device,
            seed=seed,
            # Files of ranks other than 0 (their memmap replay) go to a folder of their own inside the run's.
            run_folder=(lambda: folder.path) if group.is_main else (lambda: folder.path / f"rank-{group.rank}"),
            source=source,
            group=group,
            iterations=local.iterations,
            dataset=dataset,
            dataset_device=placed,
            action_masks=masks is not None,
        )
        algo, agent = _algorithm(cfg, local, ctx, group)
        threads = _thread_plan(cfg, local, agent, obs_space, device)
        # After the FLOPs are counted (eagerly): the first compilation belongs to training, which times it.
        if cfg.run.compile != "off":
            compile_networks(agent, cfg.run.compile)
        if evaluator is not None:
            evaluator.agent, evaluator.masks = algo.agent, masks is not None
        if envs is None:
            assert dataset is not None and cfg.data is not None and evaluator is not None, "offline: see _evaluator"
            data_source: Source = DatasetSource(
                dataset, steps_per_iteration=cfg.data.steps_per_iteration, episode_stats=evaluator.record
            )
        else:
            steps = local.collector.frames_per_batch // local.env.num_envs
            # Config validation (source_problems) lets only an algorithm that collects learn from envs.
            online = cast(Collects, algo)
            data_source = Collector(envs, online, steps=steps, device=device, seed=seed, group=group, action_mask=masks)
    except BaseException:
        if envs is not None:
            envs.close()
        if evaluator is not None:
            evaluator.close()
        raise
    spec = ALGORITHMS[cfg.algo.name]
    phases = _phases(spec, group, evaluator)
    metrics = tuple(spec.metrics)
    return Run(
        cfg, device, data_source, algo, local.iterations, folder, phases, metrics, origin, evaluator, group, threads
    )


def _evaluator(cfg: RunConfig, group: Group, device: torch.device, source: str | None) -> Evaluator | None:
    """Rank 0's in-training evaluation, when ``[eval]`` schedules one; an offline run always has one,
    since its return column is the evaluation's."""
    if not (cfg.eval.interval(offline=cfg.offline) or cfg.offline) or not group.is_main:
        return None
    # Seeded apart from the training envs, as rlcli eval is, so that it never replays their episodes.
    return Evaluator(
        None,
        cfg.env,
        episodes=cfg.eval.episodes,
        deterministic=cfg.eval.deterministic,
        seed=cfg.run.seed + SEED_OFFSET,
        device=device,
        source=source,
        num_envs=cfg.eval.envs(cfg.env.num_envs),
    )


def _spaces(
    cfg: RunConfig, opened: DatasetFile | None, envs: Any, evaluator: Evaluator | None, source: str | None
) -> tuple[spaces.Space, spaces.Space]:
    """The observation and action spaces the networks are built for, checked to be ones the algorithm
    takes: the dataset's offline (once its env is checked to be the config's), else the training envs'
    (the evaluation's, for a stand-in)."""
    if opened is not None:
        assert evaluator is not None, "an offline run always has an evaluation (_evaluator)"
        check_env(opened, cfg.env.id, evaluator.observation_space, evaluator.action_space, source)
        obs_space, act_space = opened.observation_space, opened.action_space
    elif envs is None:
        assert evaluator is not None, "an offline run always has an evaluation (_evaluator)"
        obs_space, act_space = evaluator.observation_space, evaluator.action_space
    else:
        obs_space, act_space = envs.single_observation_space, envs.single_action_space
    check_run_spaces(cfg, obs_space, act_space, source)
    return obs_space, act_space


def _masks(cfg: RunConfig, local: RunConfig, envs: Any, action: spaces.Space, seed: int, source: str | None):
    """Where the envs' action masks come from ("info", "observation"), or None: ``[env] action_mask``
    resolved once, here, for the algorithm, the collector and the evaluation to follow."""
    if not uses_masks(cfg.algo.name, cfg.env, action, source, offline=cfg.offline):
        return None
    return find_masks(local.env, envs, seed=seed, source=source)


def _algorithm(cfg: RunConfig, local: RunConfig, ctx: BuildContext, group: Group) -> tuple[Algorithm, torch.nn.Module]:
    """The rank's algorithm and its agent (the module), the networks initialised from ``run.seed`` in a forked RNG
    (torch's global generator is neither used nor changed) and made rank 0's, under bf16 autocast when
    ``run.precision`` asks (``run.compile`` is applied by the caller, after the thread plan has counted FLOPs)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.run.seed)
        algo = ALGORITHMS[cfg.algo.name].build(local.algo, ctx)
    # Every rank starts from rank 0's weights (the same seed gives the same ones; this makes sure).
    group.broadcast(list(algo.agent.state_dict().values()))
    if cfg.run.precision == "bf16":
        autocast_networks(algo.agent, torch.bfloat16, ctx.device)
    agent = algo.agent
    assert isinstance(agent, torch.nn.Module), "every algorithm's agent is an nn.Module"
    return algo, agent


def _check_threads(cfg: RunConfig, source: str | None) -> None:
    """A pinned ``run.threads`` above the cores this process may use is a ConfigError saying how many there are."""
    threads, cores = cfg.run.threads, physical_cores()
    if threads != "auto" and threads > cores:
        raise single(
            source,
            f"{threads} threads, but this machine gives this process {cores} physical "
            f"core{'s' if cores != 1 else ''}; allowed: auto, or 1 to {cores}",
            path="run.threads",
        )


def _check_precision(cfg: RunConfig, device: torch.device, source: str | None) -> None:
    """``run.precision = "bf16"`` where it cannot run well is a ConfigError saying what is supported."""
    if cfg.run.precision != "bf16":
        return
    problem = bf16_problem(device)
    if problem is not None:
        raise single(source, f"bf16 on {device}: {problem}; supported here: fp32", path="run.precision")


def _thread_plan(
    cfg: RunConfig, local: RunConfig, agent: torch.nn.Module, obs_space: spaces.Space, device: torch.device
) -> ThreadPlan:
    """The threads of each phase (:mod:`rlcli.runtime.threads`), counted on a batch of the rank's envs' observations
    (made up from the space); torch is left on the acting ones."""
    observation = None
    if cfg.run.threads == "auto":
        samples = [obs_space.sample() for _ in range(local.env.num_envs)]
        observation = observations.batch_tensor(obs_space, samples, device)
    # A whole-rollout update (A2C, REINFORCE: update_batch None) takes the rank's rollout in one step.
    rows = local.algo.update_batch or local.collector.frames_per_batch
    threads = thread_plan(cfg.run.threads, agent, observation, rows=rows, device=device)
    threads.acting()
    return threads


def _phases(spec: AlgorithmSpec, group: Group, evaluator: Evaluator | None) -> tuple[str, ...]:
    """Every timed phase in display order: the loop's, with the algorithm's sub-phases after ``update``."""
    evaluating = ("eval",) if evaluator is not None else ()
    # The gradient all-reduce of a data-parallel run is timed between backward and the optimizer step.
    algo_phases = [
        p
        for phase in spec.phases
        for p in ((phase, "update.all_reduce") if phase == "update.backward" and group.world_size > 1 else (phase,))
    ]
    phases = ("collect", "collect.policy", "collect.env_step", "update", *algo_phases, *evaluating, "log", "iteration")
    return tuple(dict.fromkeys(phases))


def check_build(cfg: RunConfig, *, source: str | None = None) -> str:
    """Build every component of ``cfg`` without training and close it; returns a one-line summary."""
    run = build_run(cfg, source=source, stand_in_data=True)
    try:
        agent = run.agent
        params = sum(p.numel() for p in agent.parameters())
        space = run.source.observation_space
        encoders = ", ".join(f"{name} {describe(module)}" for name, module in named_encoders(agent))
        assert run.algo.agent.memory is None or isinstance(run.algo.agent.memory, MemoryCore), "a built memory"
        normalize = (
            "on"
            if cfg.env.normalize_observation
            else ("off (image: frames are scaled by 1/255)" if is_image(space) else "off")
        )
        return (
            f"{cfg.algo.name} on {cfg.env.id}: observation {describe_space(space)}, action "
            f"{describe_space(run.source.action_space)}, {params:,} parameters, {run.device}; "
            f"encoders: {encoders}; observation normalization {normalize}; {_masks_note(run)}"
            + ("" if run.algo.agent.memory is None else f"; memory: {run.algo.agent.memory.describe()}")
            + f"; {run.threads.describe()}; precision {cfg.run.precision}"
            + _stand_in_note(run)
        )
    finally:
        run.close()


def _masks_note(run: Run) -> str:
    """Where the run's action masks come from, as ``[env] action_mask`` was resolved."""
    where = getattr(run.source, "action_mask", None)
    if where == "observation":
        return f'action masks from the observation\'s "action_mask" key ({run.cfg.env.action_mask})'
    if where == "info":
        return f'action masks from info["action_mask"] ({run.cfg.env.action_mask})'
    return f"no action masks ({run.cfg.env.action_mask})"


def _stand_in_note(run: Run) -> str:
    dataset = getattr(run.source, "dataset", None)
    if dataset is None or not dataset.stand_in:
        return ""
    how = how_to_get(dataset.name)
    return (
        f"; dataset {dataset.name!r} is not on this machine (not a path, nor an id under {datasets_root()}): "
        f"built on a random stand-in with the env's spaces; training needs the dataset ({how})"
    )
