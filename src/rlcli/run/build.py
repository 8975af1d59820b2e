"""``build_run``: the one place where a config's components meet."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import torch
from gymnasium import spaces

from rlcli.algos import ALGORITHMS, Collects, check_run_spaces, uses_masks
from rlcli.collectors.stepper import Collector
from rlcli.config.errors import ConfigError, ConfigIssue, single
from rlcli.config.ranks import rank_config, rank_problems
from rlcli.config.schema import RunConfig
from rlcli.datasets import DatasetFile, DatasetSource, check_env
from rlcli.datasets.load import dataset_placement, load_for_run, open_for_run
from rlcli.envs import make_envs
from rlcli.envs.masks import find_masks
from rlcli.envs.teams import team_kind
from rlcli.loggers import check_backends
from rlcli.models.compile import compile_networks
from rlcli.models.precision import bf16_problem
from rlcli.play.evaluation import Evaluator
from rlcli.play.team_evaluation import TeamEvaluator
from rlcli.run.parts import Run, algorithm, context, evaluation, threads_for, timed_phases
from rlcli.run.teams import build_team
from rlcli.runtime.cores import physical_cores
from rlcli.runtime.devices import resolve_device
from rlcli.runtime.distributed import Group, from_environment, launched, local_rank
from rlcli.sources import Source
from rlcli.trainer.run_folder import RunFolder


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
    origin = {"overrides": list(overrides), "env_packages": list(env_packages), "config_file": config_file}
    try:
        local = rank_config(cfg, group.world_size)
        if team_kind(cfg.env.id) is not None:
            # Rank r steps the envs that ranks 0..r-1 do not, as for a single-agent env.
            return build_team(cfg, local, group, device, source, origin, cfg.run.seed + group.rank * local.env.num_envs)
        return _build(cfg, local, group, device, source, origin, stand_in_data)
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
        evaluator = evaluation(cfg, group, device, source)
        obs_space, act_space = _spaces(cfg, opened, envs, evaluator, source)
        masks = _masks(cfg, local, envs, act_space, seed, source)
        dataset = load_for_run(cfg.data, opened, obs_space, act_space)
        placed = None if dataset is None or cfg.data is None else dataset_placement(cfg.data, dataset, device, source)
        ctx = context(
            cfg,
            local,
            (obs_space, act_space),
            device=device,
            seed=seed,
            folder=folder,
            group=group,
            source=source,
            dataset=dataset,
            dataset_device=placed,
            action_masks=masks is not None,
        )
        algo, agent = algorithm(cfg, local, ctx, group)
        threads = threads_for(cfg, local, agent, obs_space, device)
        # After the FLOPs are counted (eagerly): the first compilation belongs to training, which times it.
        if cfg.run.compile != "off":
            compile_networks(agent, cfg.run.compile)
        if evaluator is not None:
            # A single-agent env's evaluation (a team env's run is build_team's).
            assert isinstance(evaluator, Evaluator)
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
    phases = timed_phases(spec, group, evaluator)
    metrics = tuple(spec.metrics)
    return Run(
        cfg, device, data_source, algo, local.iterations, folder, phases, metrics, origin, evaluator, group, threads
    )


def _spaces(
    cfg: RunConfig,
    opened: DatasetFile | None,
    envs: Any,
    evaluator: Evaluator | TeamEvaluator | None,
    source: str | None,
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
