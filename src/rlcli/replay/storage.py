"""Replay storage for off-policy algorithms: preallocated tensors or memory-mapped files,
uniform or proportional prioritized sampling.

The buffer holds raw env data (unnormalized observations, unscaled rewards);
algorithms normalize what they sample with their current statistics.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from rlcli import keys
from rlcli.config.errors import single
from rlcli.config.fields import ReplayConfig
from rlcli.replay.priorities import annealed_beta, proportional_draw, set_priorities
from rlcli.replay.sumtree import SumTree

if TYPE_CHECKING:
    # Only a type here.
    from tensordict import TensorDict

Key = str | tuple[str, ...]
"""A stored key: a TensorDict key, or a nested key (a tuple) for a Dict observation's entries."""

Spec = dict[Key, tuple[tuple[int, ...], torch.dtype]]
"""Key (a nested key for a Dict observation's entries) -> (per-transition shape, dtype) of what a buffer stores."""


def storage_bytes(cfg: ReplayConfig, spec: Spec) -> int:
    """Bytes that a buffer of ``cfg.capacity`` transitions of ``spec`` allocates, sum-tree included."""
    per_item = sum(math.prod(shape) * torch.empty((), dtype=dtype).element_size() for shape, dtype in spec.values())
    total = cfg.capacity * per_item
    if cfg.prioritized:
        fanout, levels = SumTree.layout(cfg.capacity)
        total += 8 * sum(fanout**level for level in range(1, levels + 1))
    return total


def free_bytes(cfg: ReplayConfig, device: torch.device, directory: Path | None) -> int | None:
    """Free memory (or disk, for memmap) where the storage would go; None when unknown."""
    if cfg.storage == "memmap":
        folder = directory or Path.cwd()
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        return shutil.disk_usage(folder).free
    return free_memory(device)


def free_memory(device: torch.device) -> int | None:
    """Free memory of ``device`` (host memory for the CPU, available rather than unused); None when unknown."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open("/proc/meminfo", encoding="ascii") as file:
            for line in file:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def human_bytes(size: float) -> str:
    """``size`` bytes in B, KiB, MiB, GiB or TiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{size} B"
        size /= 1024
    return f"{size} B"


def check_storage(
    cfg: ReplayConfig,
    spec: Spec,
    device: torch.device,
    directory: Path | None,
    *,
    source: str | None = None,
    needed: int | None = None,
) -> None:
    """Raise a ConfigError unless the storage fits (``needed`` bytes, by default
    :func:`storage_bytes`) and, for memmap, its folder is writable."""
    if cfg.storage == "memmap" and directory is not None:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            probe = directory / f".rlcli-write-test-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise single(
                source,
                f"cannot write memmap files in {str(directory)!r}: {exc.strerror or exc}; choose a writable folder",
                path="algo.replay.directory",
            ) from None
    needed = storage_bytes(cfg, spec) if needed is None else needed
    free = free_bytes(cfg, device, directory)
    if free is not None and needed > free:
        where = "disk" if cfg.storage == "memmap" else f"{device.type} memory"
        per_item = needed // cfg.capacity
        raise single(
            source,
            f"a replay buffer of {cfg.capacity:,} transitions needs {human_bytes(needed)} "
            f"(about {per_item:,} bytes each) but only {human_bytes(free)} of {where} is free; "
            f"lower the capacity to at most {max(free // max(per_item, 1), 1):,}"
            + (' or use storage = "memmap"' if cfg.storage == "tensor" else ""),
            path="algo.replay.capacity",
        )


class ReplayBuffer:
    """A ring buffer of transitions, stored key by key as ``[capacity, *shape]`` tensors.

    Storage is allocated at the first :meth:`extend` (memmap files in
    ``cfg.directory``, else in ``directory()``), after :func:`check_storage` was passed at build time.
    """

    def __init__(
        self, cfg: ReplayConfig, spec: Spec, *, device: torch.device, directory: Callable[[], Path] | None = None
    ):
        self.cfg = cfg
        self.spec = spec
        self.device = device
        self.storage_device = device if cfg.device == "auto" and cfg.storage == "tensor" else torch.device("cpu")
        self.directory = directory
        self.tensors: dict[Key, torch.Tensor] = {}
        self.location: Path | None = None
        """The folder of memmap files once allocated; None for in-memory storage."""
        self.tree = SumTree(cfg.capacity, self.storage_device) if cfg.prioritized else None
        self.max_priority = 1.0
        self.cursor = 0
        self.size = 0
        self.added = 0

    def __len__(self) -> int:
        return self.size

    def _allocate(self) -> None:
        self.tensors, self.location = allocate(
            self.cfg, self.spec, (self.cfg.capacity,), self.storage_device, self.directory
        )

    def extend(self, batch: TensorDict) -> None:
        """Write the transitions of ``batch`` ([T, N] or [K]) whose ``valid`` is True.

        One slice write per key (two when the ring wraps); new transitions enter
        the prioritized tree at the largest priority seen so far.
        """
        if not self.tensors:
            self._allocate()
        valid = batch.get(keys.VALID, None)
        count = batch.batch_size.numel()
        rows = None
        if valid is not None and not bool(valid.all()):
            rows = valid.reshape(-1).nonzero().squeeze(1)
            count = rows.numel()
        if count == 0:
            return
        capacity = self.cfg.capacity
        # A batch larger than the whole buffer keeps only its newest transitions.
        skip = max(count - capacity, 0)
        written = count - skip
        start = self.cursor
        first = min(written, capacity - start)
        for key, storage in self.tensors.items():
            value = batch.get(key)
            value = value.reshape(-1, *value.shape[batch.batch_dims :])
            if rows is not None:
                value = value.index_select(0, rows)
            if skip:
                value = value[skip:]
            if value.device != storage.device:
                value = value.to(storage.device, non_blocking=True)
            if first == written:
                storage[start : start + first] = value
            else:
                storage[start : start + first] = value[:first]
                storage[: written - first] = value[first:]
        if self.tree is not None:
            positions = (torch.arange(written, device=self.storage_device) + start) % capacity
            self.tree.set(positions, self.max_priority)
        self.cursor = (start + written) % capacity
        self.size = min(self.size + written, capacity)
        self.added += count

    def beta(self) -> float:
        """The importance-sampling exponent, annealed from ``cfg.beta`` to 1 over ``beta_frames``."""
        return annealed_beta(self.cfg, self.added)

    def sample(self, batch_size: int, generator: torch.Generator) -> TensorDict:
        """``batch_size`` transitions drawn with replacement, on the training device.

        Adds ``index`` ([B] int64, for :meth:`update_priorities`) and, when
        prioritized, ``weight`` ([B] float32): importance weights
        ``(size * P(i))^-beta`` divided by the largest weight in the batch.
        ``generator`` must live on the storage device.
        """
        if self.size == 0:
            raise RuntimeError("sample() from an empty replay buffer")
        weight = None
        if self.tree is None:
            index = torch.randint(self.size, (batch_size,), generator=generator, device=self.storage_device)
        else:
            index, weight = proportional_draw(
                self.tree, batch_size, generator, size=self.size, beta=self.beta(), last=self.size - 1
            )
        out = {key: storage.index_select(0, index) for key, storage in self.tensors.items()}
        return sample_batch(out, index, weight, self.device)

    def update_priorities(self, index: torch.Tensor, td_error: torch.Tensor) -> None:
        """Set the priorities of sampled transitions to ``(|td_error| + eps) ** alpha``.

        Args:
            index: [B] int64, the ``index`` key of a sample.
            td_error: [B] float, the new TD errors of those transitions.
        """
        if self.tree is None:
            return
        self.max_priority = max(self.max_priority, set_priorities(self.tree, self.cfg, index, td_error))

    def state_dict(self, *, storage: bool = True) -> dict:
        """Counters and, with ``storage``, the transitions: the filled rows of in-memory storage
        and the priorities; memmap files are flushed to disk
        and referenced, not copied."""
        state: dict[str, object] = {
            "cursor": self.cursor,
            "size": self.size,
            "added": self.added,
            "max_priority": self.max_priority,
            "storage": None,
        }
        if not storage or not self.tensors:
            return state
        saved: dict[str, object]
        if self.location is not None:
            flush(self.location, self.tensors)
            saved = {"memmap": True}
        else:
            # torch.save writes a view's whole storage: a partly filled buffer saves a copy of
            # its filled rows instead of every row of its capacity.
            full = self.size == self.cfg.capacity
            saved = {
                "tensors": {key: value if full else value[: self.size].clone() for key, value in self.tensors.items()}
            }
        if self.tree is not None:
            saved["tree"] = list(self.tree.levels)
        state["storage"] = saved
        return state

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict`; without saved transitions the buffer starts empty.

        A memmap buffer reopens its files where this config puts them. Rows that the run wrote
        after the checkpoint was taken are still in them: before the ring first wraps they lie
        past ``size`` and are never sampled; after it, they replace the oldest transitions.
        """
        saved = state["storage"]
        if saved is None:
            self.cursor = self.size = 0
            self.added, self.max_priority = state["added"], state["max_priority"]
            return
        self.cursor, self.size, self.added = state["cursor"], state["size"], state["added"]
        self.max_priority = state["max_priority"]
        self._allocate()
        for key, value in saved.get("tensors", {}).items():
            self.tensors[key][: value.shape[0]] = value.to(self.storage_device)
        if self.tree is not None and "tree" in saved:
            for level, value in zip(self.tree.levels, saved["tree"]):
                level.copy_(value)


def sample_batch(out: dict, index: torch.Tensor, weight: torch.Tensor | None, device: torch.device) -> TensorDict:
    """A sample's TensorDict [B] on the training ``device``: the gathered ``out``, ``index`` and, when
    prioritized, ``weight``."""
    from tensordict import TensorDict

    out = {**out, keys.INDEX: index} | ({} if weight is None else {keys.WEIGHT: weight})
    if index.device != device:
        out = {key: value.to(device, non_blocking=True) for key, value in out.items()}
    return TensorDict(out, batch_size=[index.numel()], device=device)


class NormalizedSampler:
    """Minibatches of a buffer as the algorithms read them, for the online and the offline replay alike.

    The buffer keeps raw data: each sample gets ``input`` and ``next_input`` (its observations
    normalized by ``obs_norm``) and its ``reward`` scaled by ``reward_scaler``, with the
    statistics as they are when it is drawn.
    """

    def __init__(self, buffer, obs_norm, reward_scaler):
        self.buffer, self.obs_norm, self.reward_scaler = buffer, obs_norm, reward_scaler

    def __call__(self, size: int, generator: torch.Generator) -> TensorDict:
        """``size`` transitions of the buffer drawn with ``generator`` (on its storage device), normalized."""
        sample = self.buffer.sample(size, generator)
        sample[keys.INPUT] = self.obs_norm(sample[keys.OBSERVATION])
        sample[keys.NEXT_INPUT] = self.obs_norm(sample[keys.NEXT_OBSERVATION])
        sample[keys.REWARD] = self.reward_scaler(sample[keys.REWARD])
        return sample


def allocate(
    cfg: ReplayConfig,
    spec: Spec,
    leading: tuple[int, ...],
    storage_device: torch.device,
    directory: Callable[[], Path] | None,
) -> tuple[dict[Key, torch.Tensor], Path | None]:
    """Uninitialized ``[*leading, *shape]`` storage for each key of ``spec``: memmap files in
    ``cfg.directory``, else in ``directory()`` (reopened where they exist), or tensors on
    ``storage_device``. Returns the tensors and the folder of memmap files (None in memory)."""
    if cfg.storage != "memmap":
        return {
            key: torch.empty((*leading, *shape), dtype=dtype, device=storage_device)
            for key, (shape, dtype) in spec.items()
        }, None
    from tensordict import MemoryMappedTensor

    if cfg.directory:
        folder = Path(cfg.directory).expanduser()
    elif directory is not None:
        folder = directory()
    else:
        # A buffer built outside a run (no run folder) has nowhere to put files of its own.
        raise ValueError("memmap replay storage needs replay.directory or a run folder")
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {
        key: MemoryMappedTensor.empty(
            (*leading, *shape), dtype=dtype, filename=_memmap_file(folder, key), existsok=True
        )
        for key, (shape, dtype) in spec.items()
    }
    return tensors, folder


def flush(folder: Path, tensors: dict) -> None:
    """Write the memmap files of ``tensors`` in ``folder`` to disk, mapped pages included."""
    for key in tensors:
        descriptor = os.open(_memmap_file(folder, key), os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _memmap_file(folder: Path, key: Key) -> Path:
    """The memmap file of a spec key: the key, or a nested key's parts joined by dots."""
    return folder / f"{key if isinstance(key, str) else '.'.join(key)}.memmap"
