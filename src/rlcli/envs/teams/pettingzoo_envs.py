"""PettingZoo parallel envs (MPE2's and a user's own, by id) stepped side by side in this process, their
agents padded to ``possible_agents`` per group with an ``alive`` mask (:mod:`rlcli.envs.teams.layout`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from tensordict import TensorDict

from rlcli.config.errors import single
from rlcli.envs.teams.layout import GroupSpec, TeamLayout, group_agents, spaces_problem
from rlcli.envs.teams.registry import _pettingzoo, normalized
from rlcli.envs.teams.stepping import ALIVE, DONE, STATE, TeamStep

MASK_KEY = "action_mask"


def _agent_observation(space: spaces.Space) -> tuple[spaces.Space, bool]:
    """An agent's observation space without its ``action_mask`` key, and whether it had one (a Dict of
    ``observation`` and ``action_mask``, PettingZoo's convention, gives the ``observation`` space itself)."""
    if isinstance(space, spaces.Dict) and MASK_KEY in space.spaces:
        rest = {key: value for key, value in space.spaces.items() if key != MASK_KEY}
        if list(rest) == ["observation"]:
            return rest["observation"], True
        return spaces.Dict(rest), True
    return space, False


class PettingZooTeam:
    """``num_envs`` PettingZoo parallel envs of ``env_id``, made with ``kwargs``, grouped by agent name or
    by ``groups``; each step returns ``[N]`` TensorDicts (:mod:`rlcli.envs.teams.stepping`), with the env's
    ``state`` where it has one and ``state`` asks for it.

    Raises:
        ConfigError: PettingZoo cannot make the env, a ``groups`` table that does not fit its agents, a group
            whose agents' spaces differ, or observations other than a Box.
    """

    def __init__(
        self,
        env_id: str,
        num_envs: int,
        kwargs: Mapping[str, Any],
        *,
        groups: Mapping[str, Sequence[str]] | None = None,
        source: str | None = None,
        state: bool = True,
        masks: bool = True,
        render: bool = False,
    ):
        pettingzoo = _pettingzoo()
        assert pettingzoo is not None, "config validation checks the pettingzoo extra"
        self.env_id = normalized(env_id)
        self.num_envs = num_envs
        self.envs = []
        try:
            for i in range(num_envs):
                # With ``render``, the first env draws frames (rgb_array) for a video; the others do not draw.
                extra = {"render_mode": "rgb_array"} if render and i == 0 else {}
                self.envs.append(pettingzoo.make("parallel", env_id, **dict(kwargs), **extra))
        except Exception as exc:  # noqa: BLE001 - whatever the env raises is bad input here
            self.close()
            raise single(source, f"cannot make {env_id}: {type(exc).__name__}: {exc}", path="env.kwargs") from None
        env = self.envs[0]
        possible = list(env.possible_agents)
        grouped, problems = group_agents(possible, groups)
        if problems:
            self.close()
            raise single(source, f"{env_id}: " + "; ".join(problems), path="env.groups")
        observation = {agent: env.observation_space(agent) for agent in possible}
        action = {agent: env.action_space(agent) for agent in possible}
        specs = []
        for name, agents in grouped.items():
            problem = spaces_problem(name, agents, observation, action)
            if problem:
                self.close()
                raise single(source, f"{env_id}: {problem}", path="env.groups")
            space, masked = _agent_observation(observation[agents[0]])
            if not isinstance(space, spaces.Box):
                self.close()
                raise single(
                    source,
                    f"{env_id}: the agents of group {name!r} observe {space}; team envs take Box observations",
                    path="env.id",
                )
            specs.append(GroupSpec(name, agents, space, action[agents[0]], masked and masks))
        state_space = getattr(env, "state_space", None)
        self.layout = TeamLayout(tuple(specs), state_space if isinstance(state_space, spaces.Box) else None)
        # state() is read only for a critic that reads it: MPE's builds it from every agent's observation, at a
        # cost near a step's own.
        self.read_state = state and self.layout.state_space is not None
        # Where each agent's data goes: (group, column).
        self.place = {agent: (spec.name, column) for spec in specs for column, agent in enumerate(spec.agents)}
        self.spaces = {agent: self.layout.group(self.place[agent][0]).action_space for agent in possible}
        self.info_masks: set[str] = set()
        # [env] action_mask = "none": masks the env gives are ignored (in acting and learning alike).
        self.masks = masks

    def _buffers(self, *, after: bool) -> tuple[TensorDict, dict]:
        """A ``[N]`` TensorDict of zeros for ``after`` or ``start``, and numpy views of its tensors (by group,
        then key; the state under ``STATE``), which the steps write into."""
        n = self.num_envs
        data: dict[str, Any] = {}
        for spec in self.layout.groups:
            shape = (n, spec.size)
            space = spec.observation_space
            group: dict[str, torch.Tensor] = {
                "observation": torch.zeros(*shape, *(space.shape or ()), dtype=_dtype(space)),
            }
            if after:
                group |= {
                    "reward": torch.zeros(shape),
                    "terminated": torch.zeros(shape, dtype=torch.bool),
                    "truncated": torch.zeros(shape, dtype=torch.bool),
                }
            else:
                group[ALIVE] = torch.zeros(shape, dtype=torch.bool)
                if spec.action_mask or spec.name in self.info_masks:
                    group[MASK_KEY] = torch.ones(*shape, _mask_size(spec.action_space), dtype=torch.bool)
            data[spec.name] = TensorDict(group, batch_size=shape)
        if self.read_state:
            assert self.layout.state_space is not None
            data[STATE] = torch.zeros(n, *self.layout.state_space.shape)
        if after:
            data[DONE] = torch.zeros(n, dtype=torch.bool)
        tensors = TensorDict(data, batch_size=[n])
        views: dict[str, Any] = {
            name: {key: value.numpy() for key, value in tensors.get(name).items()} for name in self.layout.names
        }
        for key in (STATE, DONE):
            if key in data:
                views[key] = data[key].numpy()
        return tensors, views

    def _write_start(self, i: int, obs: Mapping, infos: Mapping, env, state: np.ndarray | None) -> None:
        """Row ``i`` of ``start`` from an env's observations: its live agents' observations and masks, and the
        env's ``state`` (read again when None)."""
        start = self.start_views
        for name in self.layout.names:
            start[name][ALIVE][i] = False
        for agent in env.agents:
            name, column = self.place[agent]
            group = start[name]
            group[ALIVE][i, column] = True
            value = obs.get(agent)
            if value is None:
                continue
            observation, mask = _split(value)
            group["observation"][i, column] = observation
            if mask is None:
                mask = (infos.get(agent) or {}).get(MASK_KEY)
            if mask is not None and MASK_KEY in group:
                group[MASK_KEY][i, column] = np.asarray(mask, dtype=bool)
        if STATE in start:
            start[STATE][i] = env.state() if state is None else state

    def reset(self, seed: int) -> TensorDict:
        results = [env.reset(seed=seed + i) for i, env in enumerate(self.envs)]
        # Masks given in info rather than the observation are found at the first reset.
        for _, infos in results[:1]:
            for agent, info in infos.items():
                if self.masks and isinstance(info, Mapping) and MASK_KEY in info:
                    self.info_masks.add(self.place[agent][0])
        self.start, self.start_views = self._buffers(after=False)
        self.after, self.after_views = self._buffers(after=True)
        for i, ((obs, infos), env) in enumerate(zip(results, self.envs)):
            self._write_start(i, obs, infos, env, None)
        return self.start

    def step(self, actions: dict[str, torch.Tensor]) -> TeamStep:
        chosen = {name: value.cpu().numpy() for name, value in actions.items()}
        after = self.after_views
        for name in self.layout.names:
            group = after[name]
            group["reward"].fill(0.0)
            group["terminated"].fill(False)
            group["truncated"].fill(False)
        after[DONE].fill(False)
        for i, env in enumerate(self.envs):
            acting = list(env.agents)
            step = {agent: _env_action(self.spaces[agent], chosen, self.place[agent], i) for agent in acting}
            obs, rewards, terminations, truncations, infos = env.step(step)
            for agent in acting:
                name, column = self.place[agent]
                group = after[name]
                if agent in obs:
                    group["observation"][i, column] = _split(obs[agent])[0]
                group["reward"][i, column] = rewards.get(agent, 0.0)
                group["terminated"][i, column] = terminations.get(agent, False)
                group["truncated"][i, column] = truncations.get(agent, False)
            state = None
            if STATE in after:
                state = after[STATE][i] = env.state()
            ended = not env.agents or all(terminations.get(a, False) or truncations.get(a, False) for a in env.agents)
            if ended:
                # The clock or the env ended the episode for every agent still in it.
                for agent in acting:
                    name, column = self.place[agent]
                    group = after[name]
                    if not (group["terminated"][i, column] or group["truncated"][i, column]):
                        group["truncated"][i, column] = True
                after[DONE][i] = True
                obs, infos = env.reset()
                state = None
            self._write_start(i, obs, infos, env, state)
        return TeamStep(self.after, self.start)

    @property
    def metadata(self) -> dict:
        return dict(getattr(self.envs[0], "metadata", None) or {})

    def render(self) -> Any:
        return self.envs[0].render()

    def close(self) -> None:
        for env in self.envs:
            env.close()


def _split(value: Any) -> tuple[Any, Any]:
    """An agent's observation and its action mask (None when the observation carries none)."""
    if isinstance(value, Mapping) and MASK_KEY in value:
        rest = {key: item for key, item in value.items() if key != MASK_KEY}
        return (rest["observation"] if list(rest) == ["observation"] else rest), value[MASK_KEY]
    return value, None


def _env_action(space: spaces.Space, chosen: Mapping[str, np.ndarray], place: tuple[str, int], i: int) -> Any:
    """The env's action for one agent: an int for Discrete, clipped floats for Box, an int array for MultiDiscrete."""
    name, column = place
    value = chosen[name][i, column]
    if isinstance(space, spaces.Discrete):
        return int(value) + int(space.start)
    if isinstance(space, spaces.Box):
        return np.clip(value, space.low, space.high).astype(space.dtype)
    return np.asarray(value).astype(space.dtype)


def _dtype(space: spaces.Space) -> torch.dtype:
    return torch.uint8 if space.dtype == np.uint8 else torch.float32


def _mask_size(space: spaces.Space) -> int:
    if isinstance(space, spaces.Discrete):
        return int(space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return int(space.nvec.sum())
    return 1
