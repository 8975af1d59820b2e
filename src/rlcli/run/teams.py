"""``build_run`` of a team env: team envs, one learner per group (IPPO, MAPPO), the team collector."""

from __future__ import annotations

from typing import Any

import torch

from rlcli.algos import ALGORITHMS, check_spaces
from rlcli.collectors.teams import TeamCollector
from rlcli.config.algos import MAPPOConfig, PPOConfig, gsde_on
from rlcli.config.errors import single
from rlcli.config.schema import RunConfig
from rlcli.envs.teams import TeamLayout, make_team_envs
from rlcli.learning.teams import team_metrics
from rlcli.models.compile import compile_networks
from rlcli.run.parts import Run, algorithm, context, evaluation, threads_for, timed_phases
from rlcli.runtime.distributed import Group
from rlcli.trainer.run_folder import RunFolder


def build_team(
    cfg: RunConfig,
    local: RunConfig,
    group: Group,
    device: torch.device,
    source: str | None,
    origin: dict[str, Any],
    seed: int,
) -> Run:
    """The components of one rank of a team run: team envs, one learner per group, the team collector."""
    # The env's state is read only for a critic that may read it.
    state = isinstance(cfg.algo, MAPPOConfig) and cfg.algo.critic_input in ("state", "auto")
    envs = make_team_envs(local.env, local.env.num_envs, seed=seed, device=device, source=source, state=state)
    folder = RunFolder(cfg.run.output_dir, cfg.run.name)
    evaluator = None
    try:
        layout = envs.layout
        _check_groups(cfg, layout, source)
        evaluator = evaluation(cfg, group, device, source)
        first = layout.groups[0]
        spaces = (first.observation_space, first.action_space)
        ctx = context(
            cfg, local, spaces, device=device, seed=seed, folder=folder, group=group, source=source, team=layout
        )
        algo, agent = algorithm(cfg, local, ctx, group)
        steps = local.collector.frames_per_batch // local.env.num_envs
        collector = TeamCollector(
            envs, algo, steps=steps, device=device, seed=seed, window=cfg.run.return_window, group=group
        )
        threads = threads_for(cfg, local, agent, collector.start, device)
        if cfg.run.compile != "off":
            compile_networks(agent, cfg.run.compile)
        if evaluator is not None:
            evaluator.agent = algo.agent
    except BaseException:
        envs.close()
        if evaluator is not None:
            evaluator.close()
        raise
    spec = ALGORITHMS[cfg.algo.name]
    phases = timed_phases(spec, group, evaluator)
    metrics = (*team_metrics(spec.metrics, layout.names), *collector.row_columns)
    return Run(
        cfg, device, collector, algo, local.iterations, folder, phases, metrics, origin, evaluator, group, threads
    )


def _check_groups(cfg: RunConfig, layout: TeamLayout, source: str | None) -> None:
    """Raise a ConfigError unless the algorithm takes every group's spaces and its critic's input exists."""
    for spec in layout.groups:
        check_spaces(
            cfg.algo.name,
            f"{cfg.env.id} (group {spec.name!r})",
            spec.observation_space,
            spec.action_space,
            source,
            encoder=cfg.network.encoder,
            normalize=cfg.env.normalize_observation,
            gsde=gsde_on(cfg.algo),
        )
    # A team algorithm's section (config validation refused any other on a team env) counts agents' rows.
    assert isinstance(cfg.algo, PPOConfig), "IPPO and MAPPO take PPO's fields"
    for spec in layout.groups:
        rows = cfg.collector.frames_per_batch * spec.size
        if cfg.algo.minibatch_size > rows:
            raise single(
                source,
                f"minibatch_size ({cfg.algo.minibatch_size}) must not exceed the rows of group {spec.name!r}'s rollout "
                f"({rows}: collector.frames_per_batch {cfg.collector.frames_per_batch} x {spec.size} agents)",
                path="algo.minibatch_size",
            )
    if isinstance(cfg.algo, MAPPOConfig) and cfg.algo.critic_input == "state" and layout.state_space is None:
        raise single(
            source,
            f"{cfg.env.id} has no global state (state()): its critic can read the group's observations "
            '(critic_input = "group" or "all_groups", or "auto")',
            path="algo.critic_input",
        )
