"""Replay storage for stacked frames (Atari): each frame stored once, stacks rebuilt when sampled.

A stack of S frames and the next one share S - 1 frames, so storing both observations costs 2S
frames a transition. This buffer keeps, per env step, only the newest frame of the observation,
and rebuilds both stacks of a sampled transition with one gather (as Dopamine and DQN-Zoo do):
one frame a transition, 7.06 GB for a million 84x84 transitions.

It relies on what ale-py's vector env guarantees: batches arrive in time order, ``[T, N]`` for the
same N envs, which reset in the next step (NEXT_STEP): every row's ``next_observation`` is the next
row's ``observation``, the reset steps (``valid`` False) included, and a reset observation has
zeros in its older stack slots. A reset step's successor starts an episode, so frames from before
it never enter a stack (they are zeros, as the env's own). Only 1-step transitions
(``n_step = 1``): an n-step transition's bootstrap row is not the next one.

The ring holds ``capacity // N`` steps of N envs. Never sampled: reset steps, the newest step
(its next observation arrives with the next batch) and, once the ring wraps, the oldest S - 1
steps (their older frames are overwritten).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from rlcli import keys
from rlcli.config.algos import ReplayConfig
from rlcli.replay.storage import (
    Spec,
    _fsync,
    annealed_beta,
    proportional_draw,
    set_priorities,
)
from rlcli.replay.sumtree import SumTree

if TYPE_CHECKING:
    from tensordict import TensorDict


_STACKS = (keys.OBSERVATION, keys.NEXT_OBSERVATION)


def _row_spec(spec: Spec, frame: tuple[int, ...]) -> Spec:
    """What is stored per transition: the newest frame, the start-of-episode and valid flags, and
    every spec key but the stacks."""
    rows = {key: leaf for key, leaf in spec.items() if key not in _STACKS}
    return {"frame": (frame, torch.uint8), "first": ((), torch.bool), keys.VALID: ((), torch.bool), **rows}


def frame_storage_bytes(cfg: ReplayConfig, spec: Spec, *, num_envs: int) -> int:
    """Bytes a :class:`FrameStackBuffer` of ``cfg.capacity`` transitions allocates, sum-tree included."""
    shape = spec[keys.OBSERVATION][0]
    rows = (cfg.capacity // num_envs) * num_envs
    per_row = sum(math.prod(item) * torch.empty((), dtype=dtype).element_size()
                  for item, dtype in _row_spec(spec, _frame_shape(shape)).values())
    total = rows * per_row
    if cfg.prioritized:
        fanout, levels = SumTree.layout(rows)
        total += 8 * sum(fanout**level for level in range(1, levels + 1))
    return total


def _frame_shape(stack_shape: tuple[int, ...]) -> tuple[int, ...]:
    """One frame of a stack ``(S, H, W)`` or ``(S, H, W, C)``."""
    return tuple(stack_shape[1:])


class FrameStackBuffer:
    """A ring of env steps storing one frame per transition; samples carry whole stacks.

    Duck-typed like :class:`rlcli.replay.storage.ReplayBuffer`: ``extend``, ``sample``,
    ``update_priorities``, ``state_dict``; ``index`` of a sample is ``step * N + env``.
    """

    def __init__(self, cfg: ReplayConfig, spec: Spec, *, num_envs: int, device: torch.device,
                 directory: Callable[[], Path] | None = None):
        self.cfg, self.spec, self.device, self.directory = cfg, spec, device, directory
        self.num_envs = num_envs
        shape = spec[keys.OBSERVATION][0]
        self.stack = shape[0]
        self.steps = cfg.capacity // num_envs
        if self.steps < self.stack + 1:
            raise ValueError(f"capacity {cfg.capacity} holds fewer than {self.stack + 1} steps of {num_envs} envs")
        self.row_spec = _row_spec(spec, _frame_shape(shape))
        self.storage_device = device if cfg.device == "auto" and cfg.storage == "tensor" else torch.device("cpu")
        self.tensors: dict[str, torch.Tensor] = {}
        self.tree = SumTree(self.steps * num_envs, self.storage_device) if cfg.prioritized else None
        self.max_priority = 1.0
        self.cursor = 0
        """The next step slot written."""
        self.filled = 0
        """Step slots written so far (at most ``steps``)."""
        self.added = 0
        self.pending_first = torch.ones(num_envs, dtype=torch.bool)
        """Whether the next step written starts an episode per env: at the start, and after a reset step."""

    def __len__(self) -> int:
        """Transitions that can be sampled now (reset steps counted in)."""
        return self._available_steps() * self.num_envs

    def _available_steps(self) -> int:
        wrapped = self.filled == self.steps
        return max(self.filled - 1 - (self.stack - 1 if wrapped else 0), 0)

    @property
    def size(self) -> int:
        return len(self)

    @property
    def location(self) -> Path | None:
        return self._folder if self.cfg.storage == "memmap" and self.tensors else None

    def _allocate(self) -> None:
        if self.cfg.storage == "memmap":
            from tensordict import MemoryMappedTensor

            self._folder = Path(self.cfg.directory).expanduser() if self.cfg.directory else self.directory()
            self._folder.mkdir(parents=True, exist_ok=True)
            for key, (shape, dtype) in self.row_spec.items():
                self.tensors[key] = MemoryMappedTensor.empty((self.steps, self.num_envs, *shape), dtype=dtype,
                                                             filename=self._folder / f"{key}.memmap", existsok=True)
        else:
            for key, (shape, dtype) in self.row_spec.items():
                self.tensors[key] = torch.empty((self.steps, self.num_envs, *shape), dtype=dtype,
                                                device=self.storage_device)

    def extend(self, batch: TensorDict) -> None:
        """Write the ``[T, N]`` ``batch`` step by step (reset steps too, never sampled)."""
        if not self.tensors:
            self._allocate()
        valid = batch[keys.VALID].to(self.storage_device)
        rows = {"frame": batch[keys.OBSERVATION][:, :, -1].to(self.storage_device), keys.VALID: valid}
        first = torch.empty_like(valid)
        first[0] = self.pending_first.to(self.storage_device)
        # The step after a reset step acts on the new episode's first observation.
        first[1:] = ~valid[:-1]
        rows["first"] = first
        for key in self.row_spec:
            if key not in rows:
                rows[key] = batch[key].to(self.storage_device)
        steps = valid.shape[0]
        for t0 in range(0, steps, self.steps):
            chunk = slice(t0, min(t0 + self.steps, steps))
            self._write({key: value[chunk] for key, value in rows.items()})
        self.pending_first = ~valid[-1].cpu()
        self.added += int(valid.sum())

    def _write(self, rows: dict[str, torch.Tensor]) -> None:
        count = rows[keys.VALID].shape[0]
        slots = (torch.arange(count) + self.cursor) % self.steps
        first = min(count, self.steps - self.cursor)
        for key, value in rows.items():
            storage = self.tensors[key]
            storage[self.cursor:self.cursor + first] = value[:first]
            if first < count:
                storage[:count - first] = value[first:]
        self.cursor = (self.cursor + count) % self.steps
        self.filled = min(self.filled + count, self.steps)
        if self.tree is not None:
            self._reprioritize(slots)

    def _reprioritize(self, written: torch.Tensor) -> None:
        """New valid rows enter at the largest priority; rows that cannot be sampled get 0."""
        n, device = self.num_envs, self.storage_device
        env = torch.arange(n, device=device)
        valid = self.tensors[keys.VALID][written.to(device)].to(torch.float64)
        self.tree.set((written.to(device)[:, None] * n + env).reshape(-1), (valid * self.max_priority).reshape(-1))
        blocked = [(self.cursor - 1) % self.steps]
        if self.filled == self.steps:
            blocked += [(self.cursor + k) % self.steps for k in range(self.stack - 1)]
        rows = (torch.tensor(blocked, device=device)[:, None] * n + env).reshape(-1)
        self.tree.set(rows, torch.zeros(rows.numel(), dtype=torch.float64, device=device))

    def _oldest_available(self) -> int:
        wrapped = self.filled == self.steps
        return (self.cursor + self.stack - 1) % self.steps if wrapped else 0

    def beta(self) -> float:
        return annealed_beta(self.cfg, self.added)

    def _draw_uniform(self, batch_size: int, generator: torch.Generator) -> torch.Tensor:
        """Flat rows ``step * N + env`` of valid, available transitions, drawn uniformly."""
        available, n = self._available_steps(), self.num_envs
        valid = self.tensors[keys.VALID].reshape(-1)
        index = torch.empty(batch_size, dtype=torch.int64, device=self.storage_device)
        todo = torch.arange(batch_size, device=self.storage_device)
        for _ in range(64):
            draw = torch.randint(available * n, (todo.numel(),), generator=generator, device=self.storage_device)
            rows = ((draw // n + self._oldest_available()) % self.steps) * n + draw % n
            index[todo] = rows
            todo = todo[~valid[rows]]
            if todo.numel() == 0:
                return index
        raise RuntimeError("the replay buffer holds no valid transition to sample")

    def sample(self, batch_size: int, generator: torch.Generator) -> TensorDict:
        """``batch_size`` transitions with their observation and next observation stacks rebuilt, on
        the training device, with ``index`` and (prioritized) ``weight``; ``generator`` lives on the
        storage device."""
        from tensordict import TensorDict

        if len(self) == 0:
            raise RuntimeError("sample() from an empty replay buffer")
        weight = None
        if self.tree is None:
            index = self._draw_uniform(batch_size, generator)
        else:
            index, weight = proportional_draw(self.tree, batch_size, generator, size=len(self), beta=self.beta())
        out = {key: self.tensors[key].reshape(-1, *shape).index_select(0, index)
               for key, (shape, _) in self.row_spec.items() if key not in ("frame", "first", keys.VALID)}
        out[keys.OBSERVATION], out[keys.NEXT_OBSERVATION] = self.stacks(index)
        out[keys.INDEX] = index
        if weight is not None:
            out[keys.WEIGHT] = weight
        if self.storage_device != self.device:
            out = {key: value.to(self.device, non_blocking=True) for key, value in out.items()}
        return TensorDict(out, batch_size=[batch_size], device=self.device)

    def stacks(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(observation, next_observation) stacks [B, S, ...] uint8 of the flat rows ``index``."""
        n, s = self.num_envs, self.stack
        step, env = index // n, index % n
        # Steps s - S + 1 .. s + 1: the observation's frames, then the next observation's newest.
        back = torch.arange(-(s - 1), 2, device=index.device)
        flat = (((step[:, None] + back) % self.steps) * n + env[:, None]).reshape(-1)
        frame = self.tensors["frame"]
        frames = frame.reshape(-1, *frame.shape[2:]).index_select(0, flat).view(index.numel(), s + 1, *frame.shape[2:])
        first = self.tensors["first"].reshape(-1).index_select(0, flat).view(index.numel(), s + 1)
        return _masked(frames[:, :s], first[:, :s]), _masked(frames[:, 1:], first[:, 1:])

    def update_priorities(self, index: torch.Tensor, td_error: torch.Tensor) -> None:
        if self.tree is None:
            return
        self.max_priority = max(self.max_priority, set_priorities(self.tree, self.cfg, index, td_error))

    def state_dict(self, *, storage: bool = True) -> dict:
        """Counters and, with ``storage``, the stored steps (memmap files are flushed and referenced)."""
        state = {"cursor": self.cursor, "filled": self.filled, "added": self.added, "max_priority": self.max_priority,
                 "pending_first": self.pending_first.clone(), "storage": None}
        if not storage or not self.tensors:
            return state
        if self.cfg.storage == "memmap":
            for key in self.tensors:
                _fsync(self._folder / f"{key}.memmap")
            state["storage"] = {"memmap": True}
        else:
            state["storage"] = {"tensors": {key: value[:self.filled].clone() for key, value in self.tensors.items()}}
        if self.tree is not None:
            state["storage"]["tree"] = list(self.tree.levels)
        return state

    def load_state_dict(self, state: dict) -> None:
        self.added, self.max_priority = state["added"], state["max_priority"]
        saved = state["storage"]
        if saved is None:
            self.cursor = self.filled = 0
            self.pending_first = torch.ones(self.num_envs, dtype=torch.bool)
            return
        self.cursor, self.filled = state["cursor"], state["filled"]
        self.pending_first = state["pending_first"].clone()
        self._allocate()
        for key, value in saved.get("tensors", {}).items():
            self.tensors[key][:value.shape[0]] = value.to(self.storage_device)
        if self.tree is not None and "tree" in saved:
            for level, value in zip(self.tree.levels, saved["tree"]):
                level.copy_(value)


def _masked(frames: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
    """``frames`` [B, S, ...] of a stack's columns with each frame zeroed where an episode starts at a
    later column (``first`` [B, S]: whether each column's step starts one), as the env's reset does."""
    later = first[:, 1:].long()
    started_later = torch.flip(torch.cummax(torch.flip(later, [1]), 1).values, [1]) > 0
    keep = torch.cat([~started_later, torch.ones_like(started_later[:, :1])], 1)
    return frames * keep.view(*keep.shape, *([1] * (frames.dim() - 2))).to(frames.dtype)
