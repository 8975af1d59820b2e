"""Team envs: PettingZoo parallel envs (MPE2's and users' own, by registry id) and VMAS scenarios
(``vmas/<scenario>``), grouped by agent name, padded to their possible agents with an ``alive`` mask."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcli.envs.teams.layout import GroupSpec, TeamLayout, group_agents, group_name
from rlcli.envs.teams.registry import MPE2_ENVS, VMAS_PREFIX, team_id_problem, team_kind
from rlcli.envs.teams.stepping import ALIVE, DONE, STATE, TeamEnvs, TeamStep

if TYPE_CHECKING:
    import torch


def make_team_envs(
    cfg,
    num_envs: int,
    *,
    seed: int,
    device: torch.device,
    source: str | None = None,
    state: bool = True,
    render: bool = False,
) -> TeamEnvs:
    """``num_envs`` team envs of ``cfg`` (an EnvConfig whose id names a team env): VMAS's simulator on
    ``device``, or PettingZoo's envs in this process, giving the env's global state where it has one and
    ``state`` asks for it; with ``render``, the first env draws rgb_array frames (:meth:`TeamEnvs.render`).

    Raises:
        ConfigError: the env cannot be made, or its agents do not fit ``[env] groups``.
    """
    kind = team_kind(cfg.id)
    if kind == "vmas":
        from rlcli.envs.teams.vmas_envs import VmasTeam

        return VmasTeam(
            cfg.id,
            num_envs,
            cfg.kwargs,
            max_steps=cfg.max_episode_steps,
            seed=seed,
            device=device,
            groups=cfg.groups,
            source=source,
        )
    from rlcli.envs.teams.pettingzoo_envs import PettingZooTeam

    kwargs = dict(cfg.kwargs)
    if cfg.max_episode_steps is not None:
        kwargs.setdefault("max_cycles", cfg.max_episode_steps)
    # [env] action_mask = "none" ignores the env's masks; any other setting takes them where the env gives them.
    masks = cfg.action_mask != "none"
    return PettingZooTeam(
        cfg.id, num_envs, kwargs, groups=cfg.groups, source=source, state=state, masks=masks, render=render
    )


__all__ = [
    "ALIVE",
    "DONE",
    "MPE2_ENVS",
    "STATE",
    "VMAS_PREFIX",
    "GroupSpec",
    "TeamEnvs",
    "TeamLayout",
    "TeamStep",
    "group_agents",
    "group_name",
    "make_team_envs",
    "team_id_problem",
    "team_kind",
]
