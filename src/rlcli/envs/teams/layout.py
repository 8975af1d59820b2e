"""A team's groups: agents grouped by name (or by ``[env] groups``), each group's spaces, and the env's
global state space where it has one.

Team data is padded to the possible agents of each group, with an ``alive`` mask: a batch stays one dense
``[T, N, agents]`` tensor per key, so that advantages, losses and normalization are the single-agent
ones over ``N * agents`` columns, an agent that left (or has not joined) is a masked column rather than
a ragged row, and a group's shared network takes every agent in one call. A list of live agents per
step would need a gather and scatter at every step and a loss over ragged data; the padding costs the
rows of absent agents, which are few where agents leave late or rarely.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gymnasium import spaces

_INDEX = re.compile(r"^(.*?)_?\d+$")


@dataclass(frozen=True)
class GroupSpec:
    """One group: its agents, in the env's order, and the spaces they share."""

    name: str
    agents: tuple[str, ...]
    observation_space: spaces.Space
    """One agent's observation (without the ``action_mask`` key when masks come from the observation)."""
    action_space: spaces.Space
    action_mask: bool = False
    """Whether the env gives this group's agents action masks (the ``action_mask`` key of a Dict observation)."""

    @property
    def size(self) -> int:
        return len(self.agents)


@dataclass(frozen=True)
class TeamLayout:
    """Every group of a team env, and the env's global state space (None where it has none)."""

    groups: tuple[GroupSpec, ...]
    state_space: spaces.Box | None = None

    def group(self, name: str) -> GroupSpec:
        return next(group for group in self.groups if group.name == name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(group.name for group in self.groups)

    def describe(self) -> str:
        """One line per group for ``validate --build``: its agents and spaces, and whether a state exists."""
        parts = [
            f"group {g.name!r}: {g.size} agent{'s' if g.size != 1 else ''} ({', '.join(g.agents)}), observation "
            f"{_space(g.observation_space)}, action {_space(g.action_space)}"
            + (", action masks" if g.action_mask else "")
            for g in self.groups
        ]
        state = "state " + (_space(self.state_space) if self.state_space is not None else "none")
        return "; ".join([*parts, state])


def _space(space: spaces.Space) -> str:
    if isinstance(space, spaces.Box):
        return f"Box{tuple(space.shape)}"
    if isinstance(space, spaces.Discrete):
        return f"Discrete({space.n})"
    if isinstance(space, spaces.MultiDiscrete):
        return f"MultiDiscrete({space.nvec.tolist()})"
    return str(space)


def group_name(agent: str) -> str:
    """The group an agent's name puts it in, as TorchRL's PettingZoo wrapper groups them: the name without
    its trailing index (``adversary_0`` -> ``adversary``; ``agent_2`` -> ``agent``); a name without one is
    its own group."""
    match = _INDEX.match(agent)
    return match.group(1) if match and match.group(1) else agent


def group_agents(
    possible: Sequence[str], groups: Mapping[str, Sequence[str]] | None
) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """The agents of each group, by name or by the explicit ``groups`` table (``[env] groups``), and the
    problems of that table: an unknown agent, one named twice, one left out."""
    if groups is None:
        grouped: dict[str, list[str]] = {}
        for agent in possible:
            grouped.setdefault(group_name(agent), []).append(agent)
        return {name: tuple(agents) for name, agents in grouped.items()}, []
    problems = []
    seen: dict[str, str] = {}
    for name, agents in groups.items():
        for agent in agents:
            if agent not in possible:
                problems.append(f"group {name!r} names {agent!r}, which is not an agent of the env")
            elif agent in seen:
                problems.append(f"{agent!r} is in both group {seen[agent]!r} and group {name!r}")
            else:
                seen[agent] = name
    left = [agent for agent in possible if agent not in seen]
    if left:
        problems.append(f"no group holds {', '.join(repr(a) for a in left)}")
    if problems:
        problems.append(f"the env's agents: {', '.join(possible)}")
    return {name: tuple(agents) for name, agents in groups.items()}, problems


def spaces_problem(group: str, agents: Sequence[str], observation: Mapping, action: Mapping) -> str | None:
    """Why the agents of ``group`` cannot share networks (their spaces differ; the agents named), or None."""
    first = agents[0]
    for kind, table in (("observation", observation), ("action", action)):
        differ = [agent for agent in agents[1:] if table[agent] != table[first]]
        if differ:
            return (
                f"the agents of group {group!r} share one network, but their {kind} spaces differ: {first} has "
                f"{table[first]}, {', '.join(f'{a} has {table[a]}' for a in differ)}; put them in groups of "
                "their own with [env] groups"
            )
    return None
