"""Transitions of team envs: ``[T, N]`` TensorDicts with one ``[T, N, agents]`` sub-TensorDict per group,
written step by step (the data source of a team run)."""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING, NamedTuple

import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.collectors import teamstate
from rlcli.envs.teams.stepping import ALIVE, DONE, STATE

if TYPE_CHECKING:
    from gymnasium import spaces

    from rlcli.envs.teams import TeamEnvs
    from rlcli.runtime.distributed import Group
    from rlcli.timing import Timer

GROUP_RETURN = "rollout/episode_return_mean"
"""The base column of the run's return, which each group's column extends with ``/<group>``."""

NEXT_STATE = "next_state"
"""[T, N, *state] float32: the env's state after the step (the final one where an episode ended)."""


class Finished(NamedTuple):
    """The episodes one step of :meth:`TeamEpisodes.step` ended: their envs, returns, lengths and each group's returns."""

    envs: list[int]
    returns: list[float]
    lengths: list[int]
    groups: dict[str, list[float]]


class TeamEpisodes:
    """Finished team episodes as :class:`rlcli.sources.Episodes` counts them: an episode's return is the sum
    over groups of the group's return, the sum over the episode of the mean reward of its live agents; each
    group's returns are kept too (``group_returns``)."""

    def __init__(self, groups: tuple[str, ...], n: int, window: int, device: torch.device):
        self.episode_count = 0
        self.return_queue: deque = deque(maxlen=window)
        self.length_queue: deque = deque(maxlen=window)
        self.group_returns: dict[str, deque] = {name: deque(maxlen=window) for name in groups}
        self.running = {name: torch.zeros(n, dtype=torch.float64, device=device) for name in groups}
        self.lengths = torch.zeros(n, dtype=torch.int64, device=device)

    def step(
        self, reward: dict[str, torch.Tensor], alive: dict[str, torch.Tensor], done: torch.Tensor
    ) -> Finished | None:
        """Take in one step: each group's ``[N, agents]`` rewards of the agents ``alive`` at it, and ``done`` ([N]);
        returns the episodes it ended (None where none did)."""
        for name, value in reward.items():
            live = alive[name]
            count = live.sum(-1).clamp(min=1)
            self.running[name] += ((value * live).sum(-1) / count).to(torch.float64)
        self.lengths += 1
        if not bool(done.any()):
            return None
        rows = done.nonzero().flatten()
        totals = sum(self.running[name][rows] for name in self.running)
        assert isinstance(totals, torch.Tensor)
        finished = Finished(
            rows.tolist(),
            totals.tolist(),
            self.lengths[rows].tolist(),
            {name: running[rows].tolist() for name, running in self.running.items()},
        )
        self.return_queue.extend(finished.returns)
        self.length_queue.extend(finished.lengths)
        for name, running in self.running.items():
            self.group_returns[name].extend(finished.groups[name])
            running[rows] = 0.0
        self.lengths[rows] = 0
        self.episode_count += len(finished.envs)
        return finished

    def state_dict(self) -> dict:
        """The finished episodes' count and windows, and the sums of the episodes in progress."""
        return {
            "count": self.episode_count,
            "returns": list(self.return_queue),
            "lengths": list(self.length_queue),
            "groups": {name: list(values) for name, values in self.group_returns.items()},
            "running": {name: value.cpu().clone() for name, value in self.running.items()},
            "running_lengths": self.lengths.cpu().clone(),
        }

    def load_state_dict(self, state: dict, *, in_progress: bool = True) -> None:
        """Take the count and windows of :meth:`state_dict`; the episodes in progress go on where
        ``in_progress`` (envs restored mid-episode), else start afresh (envs reset)."""
        self.episode_count = state["count"]
        self.return_queue.clear()
        self.return_queue.extend(state["returns"])
        self.length_queue.clear()
        self.length_queue.extend(state["lengths"])
        for name, values in self.group_returns.items():
            values.clear()
            values.extend(state["groups"][name])
        for running in self.running.values():
            running.zero_()
        self.lengths.zero_()
        if in_progress and "running" in state:
            for name, running in self.running.items():
                running.copy_(state["running"][name])
            self.lengths.copy_(state["running_lengths"])


class TeamCollector:
    """Steps team ``envs`` with ``algo.act`` for ``steps`` steps per call and returns one raw batch: the data
    source of a team run (:class:`rlcli.sources.Source`). ``algo.carry`` makes what its policies carry between
    steps (memory, masks), told where each agent's episode starts.

    The batch (``[steps, num_envs]``, on ``device``) holds, per group (``[steps, num_envs, agents]``),
    ``observation``, ``next_observation``, ``reward``, ``terminated``, ``truncated``, ``valid`` (the agent was
    alive and acted: rows of absent agents count in nothing), ``action_mask`` where the group has masks, and
    the keys the algorithm's ``act`` returns for the group; at the top, ``state`` and ``next_state`` where the
    env has a state. Env data is stored raw. The batch is reused by the next call.
    """

    unit = "frames"

    def __init__(
        self,
        envs: TeamEnvs,
        algo,
        *,
        steps: int,
        device: torch.device,
        seed: int,
        window: int,
        group: Group | None = None,
    ):
        self.envs, self.algo, self.steps, self.device, self.seed = envs, algo, steps, device, seed
        self.world_size = 1 if group is None else group.world_size
        self.layout = envs.layout
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)
        # Cloned: the envs reuse their buffers, and the rollout keeps what each step acted on.
        self.start = envs.reset(seed).to(device).clone()
        # The policies' memory and masks; ``starting``: the envs whose episode the next step starts.
        self.carry = algo.carry(envs.num_envs, device)
        self.starting = torch.ones(envs.num_envs, dtype=torch.bool, device=device)
        self.stats = TeamEpisodes(self.layout.names, envs.num_envs, window, device)
        self.progress = 0
        self.batch: TensorDict | None = None

    @property
    def per_iteration(self) -> int:
        return self.steps * self.envs.num_envs

    @property
    def observation_space(self) -> spaces.Space:
        return self.layout.groups[0].observation_space

    @property
    def action_space(self) -> spaces.Space:
        return self.layout.groups[0].action_space

    @property
    def episode_stats(self) -> TeamEpisodes:
        return self.stats

    def _allocate(self, row: TensorDict) -> TensorDict:
        """A ``[steps, N]`` batch of zeros with the keys and shapes of one step's ``row``."""
        return row.unsqueeze(0).expand(self.steps, *row.batch_size).clone().zero_()

    def _row(self, out: TensorDict, start: TensorDict, after: TensorDict) -> TensorDict:
        """One step's data: what was acted on, what the algorithm returned and what the step gave."""
        data: dict = {}
        for spec in self.layout.groups:
            name = spec.name
            acted, stepped = start.get(name), after.get(name)
            group = {
                keys.OBSERVATION: acted.get("observation"),
                keys.NEXT_OBSERVATION: stepped.get("observation"),
                keys.REWARD: stepped.get("reward"),
                keys.TERMINATED: stepped.get("terminated"),
                keys.TRUNCATED: stepped.get("truncated"),
                keys.VALID: acted.get(ALIVE),
                **out.get(name).to_dict(),
            }
            if keys.ACTION_MASK in acted.keys():
                group[keys.ACTION_MASK] = acted.get(keys.ACTION_MASK)
            data[name] = TensorDict(group, batch_size=acted.batch_size)
        if STATE in start.keys():
            data[STATE] = start.get(STATE)
            data[NEXT_STATE] = after.get(STATE)
        return TensorDict(data, batch_size=start.batch_size, device=self.device)

    def next_batch(self, timer: Timer) -> TensorDict:
        """Run one rollout of ``steps`` steps of every env; returns the batch."""
        for t in range(self.steps):
            start = self.start
            with timer.phase("collect.policy"):
                self.carry.episode_starts(start, self.starting)
                out = self.algo.act(start, self.generator, self.carry)
                actions = {name: out.get(name).get(keys.ACTION) for name in self.layout.names}
            with timer.phase("collect.env_step"):
                after, fresh = self.envs.step(actions)
                after, fresh = after.to(self.device), fresh.to(self.device)
            row = self._row(out, start, after)
            if self.batch is None:
                self.batch = self._allocate(row)
            self.batch[t] = row
            self.stats.step(
                {name: after.get(name).get("reward") for name in self.layout.names},
                {name: start.get(name).get(ALIVE) for name in self.layout.names},
                after.get(DONE),
            )
            # The env's buffers are reused by its next step: what is acted on next is kept apart.
            self.start = fresh.clone()
            self.starting = after.get(DONE).clone()
        self.progress += self.steps * self.envs.num_envs * self.world_size
        assert self.batch is not None
        return self.batch

    @property
    def row_columns(self) -> tuple[str, ...]:
        """The columns of :meth:`row_terms`: each group's mean return."""
        return tuple(f"{GROUP_RETURN}/{name}" for name in self.layout.names)

    def row_terms(self) -> dict[str, float]:
        """Each group's mean return over the newest finished episodes (NaN before the first), as
        ``rollout/episode_return_mean/<group>``; the base column holds their sum."""
        return {
            f"{GROUP_RETURN}/{name}": (sum(values) / len(values)) if values else math.nan
            for name, values in self.stats.group_returns.items()
        }

    def state_dict(self) -> dict:
        """What continuing the rollout needs: the frame count, the action generator, the observations the next
        step acts on, the episode starts and the policies' carry, the episodes' counts and sums, and the team
        envs' own state (:mod:`rlcli.collectors.teamstate`)."""
        return {
            "frames": self.progress,
            "generator": self.generator.get_state(),
            "episodes": self.stats.state_dict(),
            "start": {key: value.cpu().clone() for key, value in self.start.flatten_keys(".").items()},
            "starting": self.starting.cpu().clone(),
            "carry": self.carry.state_dict(),
            "envs": teamstate.capture(self.envs),
        }

    def load_state_dict(self, state: dict) -> bool:
        """Continue from :meth:`state_dict`; returns whether the envs resumed exactly (mid-episode). A checkpoint
        without the envs' state (written before it was kept) resets them, seeded from the run's seed and the
        frame count.

        Raises:
            EnvStateError: the saved envs do not fit the envs built now.
        """
        self.progress = state["frames"]
        self.generator.set_state(state["generator"])
        exact = "envs" in state
        if exact:
            teamstate.restore(self.envs, state["envs"])
            for key, value in state["start"].items():
                self.start.set_(tuple(key.split(".")), value.to(self.device))
            self.starting.copy_(state["starting"])
            self.carry.load_state_dict(state["carry"])
        else:
            self.start = self.envs.reset(self.seed + self.progress).to(self.device).clone()
            self.starting.fill_(True)
        self.stats.load_state_dict(state["episodes"], in_progress=exact)
        return exact

    def close(self) -> None:
        self.envs.close()
