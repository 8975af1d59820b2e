"""The in-memory layout of a dataset's transitions (:class:`Dataset`) and the bytes it takes.

A Minari episode of ``L`` steps stores ``L + 1`` observations (the last is the one its final step
reached) and ``L`` actions, rewards, terminations and truncations. rlcli keeps that layout: every
observation once, in the space's own dtype, and for each transition the row of its observation;
the next observation is the row after it. ``terminated`` and ``truncated`` stay apart, so that a
truncated episode's last step still bootstraps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from gymnasium import spaces

from rlcli import observations


@dataclass
class Dataset:
    """A dataset's transitions in memory, on the CPU.

    ``observations`` holds every episode's observations, its last included ([R, *obs] in the space's
    dtype; a TensorDict for a Dict space); transition ``i`` starts at row ``rows[i]`` and reaches row
    ``rows[i] + 1``. ``actions`` [N, *act] (float32 for Box, int64 for Discrete), ``rewards`` [N]
    float32, ``terminated`` and ``truncated`` [N] bool; ``episode_ends`` [E] int64, the transition
    index after each episode's last.
    """

    name: str
    path: Path
    observations: Any
    rows: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    episode_ends: torch.Tensor
    observation_space: spaces.Space
    action_space: spaces.Space
    env_id: str | None
    """The id of the env the data came from, from the dataset's env spec (None when it has none)."""
    env_spec: Any = None
    stand_in: bool = False  # True for stand_in()'s random transitions, which no file holds

    @property
    def transitions(self) -> int:
        return int(self.rows.shape[0])

    @property
    def episodes(self) -> int:
        return int(self.episode_ends.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of every tensor held."""
        tensors = [self.rows, self.actions, self.rewards, self.terminated, self.truncated, self.episode_ends]
        obs = self.observations
        obs_bytes = (
            obs.numel() * obs.element_size()
            if isinstance(obs, torch.Tensor)
            else sum(v.numel() * v.element_size() for v in obs.values())
        )
        return obs_bytes + sum(t.numel() * t.element_size() for t in tensors)

    def episode_returns(self) -> torch.Tensor:
        """[E] float64: the undiscounted return of each episode."""
        episode = torch.repeat_interleave(torch.arange(self.episodes), self._lengths())
        return torch.zeros(self.episodes, dtype=torch.float64).index_add_(0, episode, self.rewards.double())

    def _lengths(self) -> torch.Tensor:
        return torch.diff(self.episode_ends, prepend=self.episode_ends.new_zeros(1))

    def padded(self, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``values`` ([N]) laid out as ``[L, E]`` (time-major, one column per episode, L its longest),
        with the mask of the real steps."""
        lengths = self._lengths()
        episode = torch.repeat_interleave(torch.arange(self.episodes), lengths)
        start = (self.episode_ends - lengths)[episode]
        step = torch.arange(self.transitions) - start
        longest = int(lengths.max()) if self.episodes else 0
        out = values.new_zeros(longest, self.episodes)
        mask = torch.zeros(longest, self.episodes, dtype=torch.bool)
        out[step, episode] = values
        mask[step, episode] = True
        return out, mask


def _leaf_bytes(space: spaces.Space) -> int:
    found = observations.leaves(space)
    pairs = found.values() if isinstance(found, dict) else [found]
    return sum(math.prod(shape) * torch.empty((), dtype=dtype).element_size() for shape, dtype in pairs)


def _action_leaf(space: spaces.Space) -> tuple[tuple[int, ...], torch.dtype]:
    if isinstance(space, spaces.Discrete):
        return (), torch.int64
    return observations.shape_of(space), torch.float32


def dataset_bytes(observation_space: spaces.Space, action_space: spaces.Space, *, steps: int, episodes: int) -> int:
    """Bytes :func:`load_dataset` allocates for ``steps`` transitions in ``episodes`` episodes."""
    shape, dtype = _action_leaf(action_space)
    action = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
    # rows (int64), reward (float32), two flags; episode ends (int64).
    return (steps + episodes) * _leaf_bytes(observation_space) + steps * (action + 8 + 4 + 2) + episodes * 8


def allocate(
    name: str, path: Path, obs_space: spaces.Space, act_space: spaces.Space, steps: int, episodes: int, env_spec: Any
) -> Dataset:
    shape, dtype = _action_leaf(act_space)
    return Dataset(
        name=name,
        path=path,
        observations=observations.host_buffer(obs_space, (steps + episodes,)),
        rows=torch.empty(steps, dtype=torch.int64),
        actions=torch.empty(steps, *shape, dtype=dtype),
        rewards=torch.empty(steps, dtype=torch.float32),
        terminated=torch.empty(steps, dtype=torch.bool),
        truncated=torch.empty(steps, dtype=torch.bool),
        episode_ends=torch.empty(episodes, dtype=torch.int64),
        observation_space=obs_space,
        action_space=act_space,
        env_id=None if env_spec is None else env_spec.id,
        env_spec=env_spec,
    )
