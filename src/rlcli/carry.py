"""What a policy carries from one step of a set of envs to the next, and what the envs say of each
step beyond its observation: the one path by which a policy's memory and an env's legal actions reach
an agent.

Whoever steps envs with an agent (the collector, the evaluator, ``rlcli collect``) keeps one
:class:`Carry` for its envs and hands it to every ``act``/``actions`` call:

- before the call, it says where an episode starts (:meth:`Carry.episode_starts`) and which actions
  the env allows (``mask``);
- an agent with memory reads ``memory``, zeroes it where ``first`` says an episode starts, and
  writes the state after the step back into it; an agent without memory has ``memory = None`` and
  reads nothing, so a memoryless run pays for one Python object per set of envs.

Checkpoints save the carry beside the observation the next step acts on, so a resumed run steps on
with the same memory.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import torch


class Remembers(Protocol):
    """What a policy's memory offers the carry: zeros of the state it keeps per env."""

    def initial(self, n: int, device: torch.device) -> torch.Tensor:
        """[n, *state] float32 zeros: the state of ``n`` envs before their first step."""
        ...


@runtime_checkable
class Acts(Protocol):
    """An agent's evaluation actions under a carry, as :class:`rlcli.algos.Agent` declares them: what the thread
    plan and export call of an agent they hold as an ``nn.Module`` (``isinstance`` checks it has them)."""

    def actions(
        self,
        observation: torch.Tensor,
        *,
        deterministic: bool,
        generator: torch.Generator | None,
        carry: Carry | None = None,
    ) -> torch.Tensor: ...


class Carry:
    """The per-env state one set of ``n`` envs carries between an agent's steps.

    Attributes:
        memory: [n, *state] float32, the policy's state after the last step of each env (before any
            reset), or None for a policy without memory.
        first: [n] bool, the observation acted on next starts an episode (or follows a lost life):
            a policy with memory zeroes its state there. Kept only when there is memory.
        mask: [n, *mask] bool, the actions the env allows at the observation acted on next (True:
            allowed), or None when the run has no action masks.
    """

    def __init__(self, n: int, device: torch.device | str, *, memory: Remembers | None = None):
        device = torch.device(device)
        self.n, self.device = n, device
        self.memory = None if memory is None else memory.initial(n, device)
        self.first = None if memory is None else torch.ones(n, dtype=torch.bool, device=device)
        self.mask: torch.Tensor | None = None

    @classmethod
    def of(cls, agent, n: int, device: torch.device | str) -> Carry:
        """The carry of ``n`` fresh envs for ``agent`` (an :class:`rlcli.algos.Agent`), whose ``memory``
        is its memory core or None."""
        return cls(n, device, memory=agent.memory)

    def episode_starts(self, rows: np.ndarray | torch.Tensor) -> None:
        """Say which envs' next observation starts an episode (``rows``: [n] bool); nothing to do
        without memory."""
        if self.first is not None:
            self.first.copy_(torch.as_tensor(rows), non_blocking=True)

    def state_dict(self) -> dict:
        return {"memory": self.memory, "first": self.first, "mask": self.mask}

    def load_state_dict(self, state: dict) -> None:
        """Take the memory, episode starts and masks of :meth:`state_dict` (saved on the CPU) onto this
        carry's device."""
        for name in ("memory", "first", "mask"):
            value = state.get(name)
            setattr(self, name, None if value is None else value.to(self.device))
