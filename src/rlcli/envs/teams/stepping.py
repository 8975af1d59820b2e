"""What a set of team envs gives the collector at each step: the protocol both kinds (PettingZoo's parallel
envs stepped side by side, VMAS's batched simulator) satisfy, and the keys of their TensorDicts.

Each step returns two ``[N]`` TensorDicts with one ``[N, agents]`` sub-TensorDict per group:

- ``after``: what the step produced, the true final observations where an episode ended: per group
  ``observation``, ``reward`` (0 for an agent that was not alive), ``terminated`` and ``truncated``
  (the agent's own: set at the step it leaves, and for every live agent at the episode's end); at the
  top, ``state`` where the env has one and ``done`` ([N] bool: the episode ended and the env has reset).
- ``start``: what the next step acts on, the reset's observations where an episode ended: per group
  ``observation``, ``alive`` (the agent is in the env and is asked for an action) and ``action_mask``
  where the group has masks; ``state`` where the env has one.

Envs reset in the same step an episode ends (gymnasium's ``SAME_STEP``): no step is wasted on a reset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    import torch
    from tensordict import TensorDict

    from rlcli.envs.teams.layout import TeamLayout

ALIVE = "alive"
"""[N, agents] bool: the agent is in the env at this observation and acts on it."""
STATE = "state"
"""[N, *state] float32: the env's global state, where it has one (a centralized critic's input)."""
DONE = "done"
"""[N] bool: every agent's episode has ended at this step (the env has reset)."""


class TeamStep(NamedTuple):
    after: TensorDict
    start: TensorDict


class TeamEnvs(Protocol):
    """``num_envs`` copies of a team env, stepped side by side with one action tensor per group."""

    num_envs: int
    layout: TeamLayout
    env_id: str

    def reset(self, seed: int) -> TensorDict:
        """Every env reset, the ``i``-th seeded with ``seed + i``; returns ``start`` as a step does."""
        ...

    def step(self, actions: dict[str, torch.Tensor]) -> TeamStep:
        """Step every env with each group's ``[N, agents, *action]`` actions (those of agents that are not
        alive are ignored); envs whose episode ended reset."""
        ...

    def render(self) -> Any:
        """The first env's frame ([H, W, 3] uint8 numpy), for envs made with ``render``."""
        ...

    def close(self) -> None: ...
