"""The parts of a built run that every kind of run shares: the :class:`Run` itself, its evaluation, its
algorithm, its thread plan and its timed phases."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from gymnasium import spaces

from rlcli import observations
from rlcli.algos import ALGORITHMS, Algorithm
from rlcli.algos.context import BuildContext
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.schema import RunConfig
from rlcli.models.precision import autocast_networks
from rlcli.play.evaluation import SEED_OFFSET, Evaluator
from rlcli.play.team_evaluation import TeamEvaluator
from rlcli.play.team_evaluation import evaluator as make_evaluator
from rlcli.runtime.distributed import Group, Single
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
    evaluator: Evaluator | TeamEvaluator | None = None
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


def evaluation(
    cfg: RunConfig, group: Group, device: torch.device, source: str | None
) -> Evaluator | TeamEvaluator | None:
    """Rank 0's in-training evaluation, when ``[eval]`` schedules one; an offline run always has one,
    since its return column is the evaluation's."""
    if not (cfg.eval.interval(offline=cfg.offline) or cfg.offline) or not group.is_main:
        return None
    # Seeded apart from the training envs, as rlcli eval is, so that it never replays their episodes.
    return make_evaluator(
        None,
        cfg.env,
        episodes=cfg.eval.episodes,
        deterministic=cfg.eval.deterministic,
        seed=cfg.run.seed + SEED_OFFSET,
        device=device,
        source=source,
        num_envs=cfg.eval.envs(cfg.env.num_envs),
    )


def algorithm(cfg: RunConfig, local: RunConfig, ctx: BuildContext, group: Group) -> tuple[Algorithm, torch.nn.Module]:
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


def threads_for(
    cfg: RunConfig, local: RunConfig, agent: torch.nn.Module, obs_space: Any, device: torch.device
) -> ThreadPlan:
    """The threads of each phase (:mod:`rlcli.runtime.threads`), counted on a batch of the rank's envs' observations
    (made up from the space; a team run passes its first observations, a TensorDict); torch is left on the
    acting ones."""
    observation = None
    if cfg.run.threads == "auto" and not isinstance(obs_space, spaces.Space):
        observation = obs_space
    elif cfg.run.threads == "auto":
        samples = [obs_space.sample() for _ in range(local.env.num_envs)]
        observation = observations.batch_tensor(obs_space, samples, device)
    # A whole-rollout update (A2C, REINFORCE: update_batch None) takes the rank's rollout in one step.
    rows = local.algo.update_batch or local.collector.frames_per_batch
    threads = thread_plan(cfg.run.threads, agent, observation, rows=rows, device=device)
    threads.acting()
    return threads


def timed_phases(spec: AlgorithmSpec, group: Group, evaluator: Evaluator | TeamEvaluator | None) -> tuple[str, ...]:
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


def context(
    cfg: RunConfig,
    local: RunConfig,
    spaces: tuple[Any, Any],
    *,
    device: torch.device,
    seed: int,
    folder: RunFolder,
    group: Group,
    source: str | None,
    **extra: Any,
) -> BuildContext:
    """The build context of one rank: the (observation, action) ``spaces``, the run's sections (the rank's share
    of ``env`` and ``collector``), and ``extra`` fields (a dataset, masks, a team's layout)."""
    return BuildContext(
        *spaces,
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
        **extra,
    )
