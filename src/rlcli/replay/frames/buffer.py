"""The frame-stack ring buffer: writing ``[T, N]`` batches (and checking where they break from the
stored steps), sampling uniformly or by priority, and its state; see :mod:`rlcli.replay.frames`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from rlcli import keys
from rlcli.config.fields import ReplayConfig
from rlcli.replay.frames.layout import FIRST, FRAME, rebuild_stacks, row_spec, stack_shape
from rlcli.replay.priorities import annealed_beta, proportional_draw, set_priorities
from rlcli.replay.storage import Key, Spec, allocate, flush, sample_batch
from rlcli.replay.sumtree import SumTree

if TYPE_CHECKING:
    from tensordict import TensorDict


class FrameStackBuffer:
    """A ring of env steps storing one frame per transition; samples carry whole stacks.

    Duck-typed like :class:`rlcli.replay.storage.ReplayBuffer`: ``extend``, ``sample``,
    ``update_priorities``, ``state_dict``; the ``index`` of a sample is ``slot * N + env``.
    Storage is allocated at the first :meth:`extend` (memmap files in ``cfg.directory``, else in
    ``directory()``).

    Args:
        cfg: the replay section; ``capacity // num_envs`` steps are kept.
        spec: per-transition spec whose ``observation`` is ``(S, H, W)`` uint8, newest frame last.
        num_envs: N, the envs of every batch.
        stack: S, when given checked against the spec.
    """

    def __init__(
        self,
        cfg: ReplayConfig,
        spec: Spec,
        *,
        num_envs: int,
        device: torch.device,
        stack: int | None = None,
        directory: Callable[[], Path] | None = None,
    ):
        self.cfg, self.spec, self.device, self.directory = cfg, spec, device, directory
        self.num_envs = num_envs
        self.stack_shape = stack_shape(spec, stack)
        self.stack = self.stack_shape[0]
        self.steps = cfg.capacity // num_envs
        if self.steps < self.stack + 1:
            raise ValueError(f"capacity {cfg.capacity} holds fewer than {self.stack + 1} steps of {num_envs} envs")
        self.row_spec = row_spec(spec, self.stack_shape[1:])
        self.storage_device = device if cfg.device == "auto" and cfg.storage == "tensor" else torch.device("cpu")
        self.tensors: dict[Key, torch.Tensor] = {}
        self.location: Path | None = None
        """The folder of memmap files once allocated; None for in-memory storage."""
        self.tree = SumTree(self.steps * num_envs, self.storage_device) if cfg.prioritized else None
        self.max_priority = 1.0
        self.cursor = 0
        """The next slot written."""
        self.filled = 0
        """Slots written so far (at most ``steps``)."""
        self.added = 0
        self._restart()

    def _restart(self) -> None:
        """Forget what links the next batch to the stored steps."""
        self.last_next: torch.Tensor | None = None
        """[N, *stack_shape] uint8: the last batch's last next observation, which the next batch must start from."""
        self.pending_first = torch.ones(self.num_envs, dtype=torch.bool, device=self.storage_device)
        """[N] bool: whether the next step written starts an episode (it follows a reset step)."""

    def __len__(self) -> int:
        """Transitions in the steps that can be sampled now, counting the few never drawn (reset steps,
        steps cut by a break)."""
        return self.available()[1] * self.num_envs

    def available(self) -> tuple[int, int]:
        """(oldest slot, count): the steps that can be sampled, all but the newest and, once the
        ring is full, the oldest S - 1."""
        if self.filled < self.steps:
            return 0, max(self.filled - 1, 0)
        return (self.cursor + self.stack - 1) % self.steps, self.steps - self.stack

    @property
    def allocated_bytes(self) -> int:
        """Bytes held now: what :func:`~rlcli.replay.frames.layout.frame_storage_bytes` counts once the
        first batch is in."""
        held = [
            *self.tensors.values(),
            *([self.last_next] if self.last_next is not None else []),
            *(self.tree.levels if self.tree is not None else []),
        ]
        return sum(tensor.nbytes for tensor in held)

    def _allocate(self) -> None:
        self.tensors, self.location = allocate(
            self.cfg, self.row_spec, (self.steps, self.num_envs), self.storage_device, self.directory
        )

    def extend(self, batch: TensorDict) -> None:
        """Write the ``[T, N]`` ``batch``, reset steps too: of ``observation`` ([T, N, S, H, W] uint8)
        the newest frames, of ``next_observation`` the last step's stacks, ``valid`` ([T, N] bool) and
        every other spec key."""
        if not self.tensors:
            self._allocate()
        device = self.storage_device
        valid = batch[keys.VALID].to(device)
        count = valid.shape[0]
        if count == 0:
            return
        observation = batch[keys.OBSERVATION]
        # Zeros in the older slots make a reset stack (ale-py's): it starts an episode, after a reset
        # step or after envs that were reset between two batches (a resumed run).
        reset_stack = observation[0, :, :-1].to(device).flatten(1).amax(1) == 0
        first = torch.cat([(self.pending_first | reset_stack)[None], ~valid[:-1]])
        rows: dict[Key, torch.Tensor] = {FRAME: observation[:, :, -1].to(device), FIRST: first, keys.VALID: valid}
        for key in self.row_spec:
            if key not in rows:
                rows[key] = batch[key].to(device)
        start = self.cursor
        previous = (start - 1) % self.steps if self.filled and count < self.steps else None
        for t0 in range(0, count, self.steps):
            self._write({key: value[t0 : t0 + self.steps] for key, value in rows.items()})
        self._verify(observation, start, previous)
        if self.tree is not None:
            kept = min(count, self.steps)
            slots = (torch.arange(count - kept, count) + start) % self.steps
            # The step that was newest now has its next observation: it enters the tree too.
            self._reprioritize(slots if previous is None else torch.cat([torch.tensor([previous]), slots]))
        self.pending_first = ~valid[-1]
        self.last_next = batch[keys.NEXT_OBSERVATION][-1].to(device, copy=True)
        self.added += int(valid.sum())

    def _write(self, rows: dict[Key, torch.Tensor]) -> None:
        count = rows[keys.VALID].shape[0]
        first = min(count, self.steps - self.cursor)
        for key, value in rows.items():
            storage = self.tensors[key]
            storage[self.cursor : self.cursor + first] = value[:first]
            if first < count:
                storage[: count - first] = value[first:]
        self.cursor = (self.cursor + count) % self.steps
        self.filled = min(self.filled + count, self.steps)

    def _verify(self, observation: torch.Tensor, start: int, previous: int | None) -> None:
        """Never sample the steps whose stacks, rebuilt, differ from the env's: checked for the first S
        steps of a batch (``observation`` [T, N, S, H, W] uint8, written from slot ``start``), whose
        stacks reach stored frames, and for the step before it (slot ``previous``), whose next
        observation must be the stored last next one.

        They differ after a break: envs reset between two batches, a buffer loaded without its steps,
        or envs whose state was restored but not their emulator's.
        """
        count, n, device = observation.shape[0], self.num_envs, self.storage_device
        # Rows that a longer batch overwrote are skipped: their slots hold later rows.
        low, high = max(count - self.steps, 0), min(self.stack, count)
        if low >= high:
            return
        slots = ((torch.arange(low, high) + start) % self.steps).to(device)
        rebuilt, _ = self.stacks((slots[:, None] * n + torch.arange(n, device=device)).reshape(-1))
        rebuilt = rebuilt.view(high - low, n, *self.stack_shape)
        same = (rebuilt == observation[low:high].to(device)).flatten(2).all(2)
        # A transition needs its stack and the next one, the next step's (later steps were the env's
        # own shifts; the batch's last next observation is checked with the next batch).
        whole = torch.cat([same, torch.ones_like(same[:1])])
        sampleable = self.tensors[keys.VALID]
        sampleable[slots] = sampleable[slots] & whole[:-1] & whole[1:]
        if previous is not None:
            linked = (
                torch.zeros(n, dtype=torch.bool, device=device)
                if self.last_next is None
                else (rebuilt[0] == self.last_next).flatten(1).all(1)
            )
            sampleable[previous] = sampleable[previous] & linked

    def _reprioritize(self, written: torch.Tensor) -> None:
        """Sampleable rows of the ``written`` slots enter at the largest priority; rows that cannot be
        sampled (the newest step, the oldest S - 1 of a full ring) get 0."""
        # extend calls this only for a prioritized buffer, the one with a tree.
        assert self.tree is not None
        n, device = self.num_envs, self.storage_device
        env = torch.arange(n, device=device)
        written = written.to(device)
        sampleable = self.tensors[keys.VALID][written].to(device, torch.float64)
        self.tree.set((written[:, None] * n + env).reshape(-1), (sampleable * self.max_priority).reshape(-1))
        blocked = [(self.cursor - 1) % self.steps]
        if self.filled == self.steps:
            blocked += [(self.cursor + k) % self.steps for k in range(self.stack - 1)]
        rows = (torch.tensor(blocked, device=device)[:, None] * n + env).reshape(-1)
        self.tree.set(rows, torch.zeros(rows.numel(), dtype=torch.float64, device=device))

    def beta(self) -> float:
        """The importance-sampling exponent, annealed from ``cfg.beta`` to 1 over ``beta_frames``."""
        return annealed_beta(self.cfg, self.added)

    def _draw_uniform(self, batch_size: int, generator: torch.Generator) -> torch.Tensor:
        """Flat rows ``slot * N + env`` of sampleable transitions, drawn uniformly: the few draws that
        hit a reset step (one a game and env) or a step cut by a break are drawn again."""
        (oldest, available), n = self.available(), self.num_envs
        sampleable = self.tensors[keys.VALID].reshape(-1)
        index = torch.empty(batch_size, dtype=torch.int64, device=self.storage_device)
        todo = torch.arange(batch_size, device=self.storage_device)
        for _ in range(64):
            draw = torch.randint(available * n, (todo.numel(),), generator=generator, device=self.storage_device)
            rows = ((draw // n + oldest) % self.steps) * n + draw % n
            index[todo] = rows
            todo = todo[~sampleable[rows].to(todo.device)]
            if todo.numel() == 0:
                return index
        raise RuntimeError("the replay buffer holds no valid transition to sample")

    def sample(self, batch_size: int, generator: torch.Generator) -> TensorDict:
        """``batch_size`` transitions drawn with replacement, on the training device: ``observation``
        and ``next_observation`` rebuilt ([B, S, H, W] uint8), every other spec key, ``index`` and, when
        prioritized, ``weight``, as ReplayBuffer's. ``generator`` lives on the storage device."""
        if len(self) == 0:
            raise RuntimeError("sample() from an empty replay buffer")
        weight = None
        if self.tree is None:
            index = self._draw_uniform(batch_size, generator)
        else:
            index, weight = proportional_draw(self.tree, batch_size, generator, size=len(self), beta=self.beta())
        out = {
            key: self.tensors[key].reshape(-1, *shape).index_select(0, index)
            for key, (shape, _) in self.row_spec.items()
            if key not in (FRAME, FIRST, keys.VALID)
        }
        out[keys.OBSERVATION], out[keys.NEXT_OBSERVATION] = self.stacks(index)
        return sample_batch(out, index, weight, self.device)

    def stacks(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(observation, next_observation) stacks [B, S, H, W] uint8 of the flat rows ``index`` ([B]
        int64 on the storage device): :func:`~rlcli.replay.frames.layout.rebuild_stacks`."""
        return rebuild_stacks(self.tensors[FRAME], self.tensors[FIRST], index, stack=self.stack)

    def update_priorities(self, index: torch.Tensor, td_error: torch.Tensor) -> None:
        """Set the priorities of the rows of the latest sample to ``(|td_error| + eps) ** alpha``.

        Args:
            index: [B] int64, the ``index`` key of a sample drawn since the last :meth:`extend`.
            td_error: [B] float, the new TD errors of those transitions.
        """
        if self.tree is None:
            return
        self.max_priority = max(self.max_priority, set_priorities(self.tree, self.cfg, index, td_error))

    def state_dict(self, *, storage: bool = True) -> dict:
        """Counters and, with ``storage``, the stored steps, the priorities and what links them to the
        next batch; memmap files are flushed to disk and referenced, not copied."""
        state: dict[str, object] = {
            "cursor": self.cursor,
            "filled": self.filled,
            "added": self.added,
            "max_priority": self.max_priority,
            "storage": None,
        }
        if not storage or not self.tensors:
            return state
        link = {
            "pending_first": self.pending_first.clone(),
            "last_next": None if self.last_next is None else self.last_next.clone(),
        }
        saved: dict[str, object]
        if self.location is not None:
            flush(self.location, self.tensors)
            saved = {"memmap": True, **link}
        else:
            # A partly filled ring saves a copy of its written slots, not its whole capacity.
            tensors = {key: value[: self.filled].clone() for key, value in self.tensors.items()}
            saved = {"tensors": tensors, **link}
        if self.tree is not None:
            saved["tree"] = list(self.tree.levels)
        state["storage"] = saved
        return state

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict`; without saved steps the buffer starts empty.

        The next batch is checked against the saved steps: envs that were reset in between break
        the link, as the module docstring says.
        """
        self.added, self.max_priority = state["added"], state["max_priority"]
        self._restart()
        saved = state["storage"]
        if saved is None:
            self.cursor = self.filled = 0
            return
        self.cursor, self.filled = state["cursor"], state["filled"]
        device = self.storage_device
        if saved.get("last_next") is not None:
            self.pending_first = saved["pending_first"].to(device)
            self.last_next = saved["last_next"].to(device)
        self._allocate()
        for key, value in saved.get("tensors", {}).items():
            self.tensors[key][: value.shape[0]] = value.to(device)
        if self.tree is not None and "tree" in saved:
            for level, value in zip(self.tree.levels, saved["tree"]):
                level.copy_(value)
