"""VMAS scenarios (``vmas/<scenario>``): every env in one batched torch simulator, stepped as VMAS does it,
with no Python loop over envs; envs whose episode ended reset in the same step (all at once when all ended,
as with a shared ``max_steps``)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from tensordict import TensorDict

from rlcli.config.errors import single
from rlcli.envs.teams.layout import GroupSpec, TeamLayout, group_agents, spaces_problem
from rlcli.envs.teams.registry import VMAS_PREFIX
from rlcli.envs.teams.stepping import ALIVE, DONE, TeamStep


def gymnasium_space(space: Any) -> spaces.Space:
    """A gymnasium space equal to VMAS's (which are ``gym``'s): Box, Discrete or MultiDiscrete."""
    kind = type(space).__name__
    if kind == "Box":
        return spaces.Box(np.asarray(space.low), np.asarray(space.high), dtype=np.float32)
    if kind == "Discrete":
        return spaces.Discrete(int(space.n))
    if kind == "MultiDiscrete":
        return spaces.MultiDiscrete(np.asarray(space.nvec))
    raise TypeError(f"VMAS space {space} has no gymnasium counterpart here")


class VmasTeam:
    """``num_envs`` envs of a VMAS scenario in one simulator on ``device``; ``kwargs`` go to the scenario
    (``n_agents``, ``continuous_actions``, ...), ``max_steps`` truncates episodes.

    Raises:
        ConfigError: VMAS cannot make the scenario with ``kwargs``, or a ``groups`` table that does not fit.
    """

    def __init__(
        self,
        env_id: str,
        num_envs: int,
        kwargs: Mapping[str, Any],
        *,
        max_steps: int | None,
        seed: int,
        device: torch.device,
        groups: Mapping[str, Sequence[str]] | None = None,
        source: str | None = None,
    ):
        vmas = importlib.import_module("vmas")
        self.env_id, self.num_envs, self.device = env_id, num_envs, device
        scenario = env_id[len(VMAS_PREFIX) :]
        options = dict(kwargs)
        max_steps = options.pop("max_steps", max_steps)
        try:
            self.env = vmas.make_env(
                scenario,
                num_envs=num_envs,
                device=device,
                continuous_actions=options.pop("continuous_actions", True),
                max_steps=max_steps,
                seed=seed,
                terminated_truncated=True,
                # A Gaussian policy's sample may leave the bounds: clipped to them, as the collector does.
                clamp_actions=True,
                **options,
            )
        except Exception as exc:  # noqa: BLE001 - whatever the scenario raises is bad input here
            raise single(source, f"cannot make {env_id}: {type(exc).__name__}: {exc}", path="env.kwargs") from None
        env = self.env
        names = [agent.name for agent in env.agents]
        grouped, problems = group_agents(names, groups)
        if problems:
            raise single(source, f"{env_id}: " + "; ".join(problems), path="env.groups")
        observation = {name: gymnasium_space(space) for name, space in zip(names, env.observation_space.spaces)}
        action = {name: gymnasium_space(space) for name, space in zip(names, env.action_space.spaces)}
        specs = []
        for name, agents in grouped.items():
            problem = spaces_problem(name, agents, observation, action)
            if problem:
                raise single(source, f"{env_id}: {problem}", path="env.groups")
            specs.append(GroupSpec(name, agents, observation[agents[0]], action[agents[0]]))
        self.layout = TeamLayout(tuple(specs), None)
        # The index of each group's agents in VMAS's list, in the group's order.
        self.index = {spec.name: [names.index(agent) for agent in spec.agents] for spec in specs}
        self.discrete = {spec.name: isinstance(spec.action_space, spaces.Discrete) for spec in specs}

    def _observations(self, obs: Sequence[torch.Tensor]) -> dict[str, torch.Tensor]:
        return {name: torch.stack([obs[i] for i in index], dim=1) for name, index in self.index.items()}

    def _start(self, obs: Sequence[torch.Tensor]) -> TensorDict:
        n = self.num_envs
        data = {}
        for name, value in self._observations(obs).items():
            shape = value.shape[:2]
            alive = torch.ones(shape, dtype=torch.bool, device=self.device)
            data[name] = TensorDict({"observation": value, ALIVE: alive}, batch_size=shape)
        return TensorDict(data, batch_size=[n])

    def reset(self, seed: int) -> TensorDict:
        return self._start(self.env.reset(seed=seed))

    def step(self, actions: dict[str, torch.Tensor]) -> TeamStep:
        ordered: list[torch.Tensor | None] = [None] * len(self.env.agents)
        for name, index in self.index.items():
            value = actions[name]
            for column, i in enumerate(index):
                action = value[:, column]
                ordered[i] = action.unsqueeze(-1) if self.discrete[name] else action
        obs, rewards, terminated, truncated, _ = self.env.step(ordered)
        n = self.num_envs
        done = terminated | truncated
        data: dict[str, Any] = {}
        for name, value in self._observations(obs).items():
            index = self.index[name]
            shape = value.shape[:2]
            term = terminated[:, None].expand(shape)
            data[name] = TensorDict(
                {
                    "observation": value,
                    "reward": torch.stack([rewards[i] for i in index], dim=1).float(),
                    "terminated": term.clone(),
                    "truncated": (truncated[:, None].expand(shape) & ~term).clone(),
                },
                batch_size=shape,
            )
        data[DONE] = done.clone()
        after = TensorDict(data, batch_size=[n])
        if not done.any():
            return TeamStep(after, self._start(obs))
        if done.all():
            return TeamStep(after, self._start(self.env.reset()))
        fresh = obs
        for i in done.nonzero().flatten().tolist():
            fresh = self.env.reset_at(i)
        return TeamStep(after, self._start(fresh))

    def render(self) -> Any:
        return self.env.render(mode="rgb_array", env_index=0, visualize_when_rgb=False)

    def close(self) -> None:
        # VMAS holds no process or file; its renderer, when one was made, is closed with the env.
        viewer = getattr(self.env, "viewer", None)
        if viewer is not None:
            viewer.close()
