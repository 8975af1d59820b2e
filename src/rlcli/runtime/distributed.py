"""The process group of a data-parallel run, and a no-op stand-in for one process.

``torchrun`` (or ``rlcli train --nproc N``, which starts ranks through torchrun's own
launcher, :mod:`rlcli.runtime.launch`) sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and the
rendezvous address; :func:`from_environment` joins that group. Everything else talks to a
:class:`Group` and never asks whether the run is distributed: with one process the calls
do nothing.

Each rank steps its own envs and keeps its own replay buffer; gradients are averaged
in the one gradient step, the observation statistics are merged, and every decision
that could make ranks diverge (stop, a non-finite loss, PPO's KL early stop) is taken
jointly. Rank 0 alone writes the run folder.
"""

from __future__ import annotations

import datetime
import os
from typing import Any, Protocol

import torch

PIN_CORES = "RLCLI_PIN_CORES"
"""Set to 1 by ``--nproc`` for its ranks: each rank keeps to a core of its own when there are enough."""

COLLECTIVE_TIMEOUT = datetime.timedelta(minutes=5)
"""How long a collective waits for a rank before failing: a rank that dies or hangs ends the
run with an error on the others instead of a hang."""


RANK_LOST_STATUS = 3
"""The exit status of a rank that ends with :class:`RankLost`: it is never the cause of a failed run,
so that the launcher reports the rank that is, even when both end within the same second."""

RANK_LOST_GRACE_S = 3.0
"""How long a rank that lost its peers waits before it exits: the rank that failed on its own (still
printing its error and tearing down) exits first, so the launcher, which stops every other rank as soon
as one exits, sees that rank's own status rather than stopping it before it could report one."""


class RankLost(Exception):
    """A collective failed: another rank died, stopped or went silent past the timeout."""

    def __init__(self, rank: int, error: BaseException):
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        super().__init__(
            f"rank {rank}: a collective with the other ranks failed, so another rank has died or "
            f"stopped ({first[:160]})"
        )


class Group(Protocol):
    """What the trainer, the gradient step and the statistics need of the ranks of a run."""

    rank: int
    world_size: int
    local_rank: int

    @property
    def is_main(self) -> bool:
        """Whether this is rank 0, the one that writes the run folder and prints."""
        ...

    def average_gradients(
        self, params: list[torch.nn.Parameter], timer, *, weight: torch.Tensor | int | None = None
    ) -> None:
        """Replace each gradient by its mean over the ranks (one flat all-reduce), each rank's
        weighted by its ``weight`` (a count of samples) when given."""
        ...

    def mean(self, values: torch.Tensor) -> torch.Tensor:
        """The mean over the ranks of ``values`` (a float tensor), the same on every rank."""
        ...

    def sum(self, values: torch.Tensor) -> torch.Tensor:
        """The sum over the ranks of ``values``, the same on every rank."""
        ...

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is true on any rank: a joint decision."""
        ...

    def gather_rows(self, values: torch.Tensor) -> torch.Tensor:
        """Every rank's ``values`` ([n], the same n on every rank), stacked in rank order
        ([world_size, n]) and the same on every rank: one collective, no pickling."""
        ...

    def gather_to_main(self, value: Any) -> list[Any] | None:
        """``value`` of every rank, in rank order, on rank 0 (None elsewhere)."""
        ...

    def broadcast(self, tensors: list[torch.Tensor]) -> None:
        """Overwrite ``tensors`` in place with rank 0's."""
        ...

    def broadcast_object(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank."""
        ...

    def close(self, *, orderly: bool = True) -> None:
        """Leave the group: ``orderly`` (the ranks finished together) waits for the others first;
        after a failure this rank leaves at once, so that the others' next collective fails now
        instead of at the timeout."""
        ...


class Single:
    """The group of a run in one process: rank 0 of 1; every collective is the identity."""

    rank = 0
    world_size = 1
    local_rank = 0
    is_main = True

    def average_gradients(
        self, params: list[torch.nn.Parameter], timer, *, weight: torch.Tensor | int | None = None
    ) -> None:
        pass

    def mean(self, values: torch.Tensor) -> torch.Tensor:
        return values

    def sum(self, values: torch.Tensor) -> torch.Tensor:
        return values

    def any(self, flag: bool) -> bool:
        return flag

    def gather_rows(self, values: torch.Tensor) -> torch.Tensor:
        return values.unsqueeze(0)

    def gather_to_main(self, value: Any) -> list[Any] | None:
        return [value]

    def broadcast(self, tensors: list[torch.Tensor]) -> None:
        pass

    def broadcast_object(self, value: Any) -> Any:
        return value

    def close(self, *, orderly: bool = True) -> None:
        pass


# What the transports' errors say when a peer has gone (gloo raises a plain RuntimeError).
_PEER_GONE = ("gloo", "nccl", "connection", "timed out", "timeout", "broken pipe", "reset by peer")


def _peer_gone(exc: BaseException) -> bool:
    import torch.distributed as dist

    if isinstance(exc, (OSError, getattr(dist, "DistError", OSError))):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(word in text for word in _PEER_GONE)


def _collective(method):
    """Turn the transport's error of a collective (a peer gone, a timeout) into :class:`RankLost`;
    any other error (a bug) propagates as it is."""

    def wrapped(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (RuntimeError, OSError) as exc:
            if not _peer_gone(exc):
                raise
            raise RankLost(self.rank, exc) from None

    wrapped.__name__, wrapped.__doc__ = method.__name__, method.__doc__
    return wrapped


class ProcessGroup:
    """The default torch.distributed process group: gloo for CPU runs; for CUDA runs nccl for
    CUDA tensors beside gloo for CPU ones. A collective that fails in the transport raises
    :class:`RankLost`."""

    def __init__(self, device: torch.device):
        import torch.distributed as dist

        self.dist = dist
        self.rank = int(os.environ["RANK"])
        self.world_size = int(os.environ["WORLD_SIZE"])
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.device = device
        if os.environ.get(PIN_CORES) == "1":
            _pin_to_core(self.local_rank, int(os.environ.get("LOCAL_WORLD_SIZE", self.world_size)))
        # gloo for CPU tensors; a CUDA run adds nccl for its CUDA tensors (gradients, statistics),
        # while the small CPU exchanges (loss terms, episodes, flags) still go through gloo.
        backend = "cpu:gloo,cuda:nccl" if device.type == "cuda" else "gloo"
        if device.type == "cuda":
            # nccl works on the current device: this rank's own, not cuda:0 on every rank.
            torch.cuda.set_device(device)
        if not dist.is_initialized():
            dist.init_process_group(
                backend, timeout=COLLECTIVE_TIMEOUT, device_id=device if device.type == "cuda" else None
            )
        self.flat: torch.Tensor | None = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @_collective
    def average_gradients(
        self, params: list[torch.nn.Parameter], timer, *, weight: torch.Tensor | int | None = None
    ) -> None:
        with timer.phase("update.all_reduce"):
            grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
            numel = sum(g.numel() for g in grads)
            # One buffer: every gradient, then this rank's weight; after the sum, the last entry
            # is the total weight (the world size when unweighted) to divide by.
            if self.flat is None or self.flat.numel() != numel + 1:
                self.flat = torch.empty(numel + 1, dtype=grads[0].dtype, device=grads[0].device)
            views = list(self.flat[:numel].split([g.numel() for g in grads]))
            torch._foreach_copy_(views, [g.reshape(-1) for g in grads])
            if weight is None:
                self.flat[numel] = 1.0
            else:
                self.flat[numel] = weight
                self.flat[:numel].mul_(self.flat[numel])
            self.dist.all_reduce(self.flat)
            # A total of 0 (no rank had a sample) leaves the zero gradients as they are.
            self.flat[:numel].div_(self.flat[numel].clamp(min=1.0))
            for param, grad, view in zip(params, grads, views):
                if param.grad is None:
                    param.grad = grad
                param.grad.copy_(view.view_as(grad))

    def mean(self, values: torch.Tensor) -> torch.Tensor:
        return self.sum(values) / self.world_size

    @_collective
    def sum(self, values: torch.Tensor) -> torch.Tensor:
        out = values.detach().clone()
        self.dist.all_reduce(out)
        return out

    @_collective
    def any(self, flag: bool) -> bool:
        out = torch.tensor([1.0 if flag else 0.0], device=self.device)
        self.dist.all_reduce(out, op=self.dist.ReduceOp.MAX)
        return bool(out.item() > 0)

    @_collective
    def gather_rows(self, values: torch.Tensor) -> torch.Tensor:
        out = values.new_empty(self.world_size * values.numel())
        # torch 2.13 renamed all_gather_into_tensor (deprecated there) to all_gather_single.
        gather = getattr(self.dist, "all_gather_single", None) or self.dist.all_gather_into_tensor
        gather(out, values.contiguous().view(-1))
        return out.view(self.world_size, -1)

    @_collective
    def gather_to_main(self, value: Any) -> list[Any] | None:
        out: list[Any] | None = [None] * self.world_size if self.is_main else None
        self.dist.gather_object(value, out, dst=0)
        return out

    @_collective
    def broadcast(self, tensors: list[torch.Tensor]) -> None:
        for tensor in tensors:
            self.dist.broadcast(tensor, src=0)

    @_collective
    def broadcast_object(self, value: Any) -> Any:
        box = [value]
        self.dist.broadcast_object_list(box, src=0)
        return box[0]

    def close(self, *, orderly: bool = True) -> None:
        if not self.dist.is_initialized():
            return
        # Leave together: a rank that tears its group down while another still talks to it
        # can abort the process (gloo's threads), which would end a finished run with a failure.
        # After a failure the others are not coming: a barrier would wait for the timeout.
        if orderly:
            try:
                self.dist.barrier()
            except (RuntimeError, OSError):
                pass
        self.dist.destroy_process_group()


def _pin_to_core(local_rank: int, local_ranks: int) -> None:
    """Keep this rank on one core when the node has a core for each rank (Linux).

    Ranks meet at every gradient step; a rank moved between cores, or sharing one, keeps the
    other waiting in its all-reduce (measured on 2 cores, ppo_cartpole: 0.75 -> 0.47 ms a step).
    """
    if not hasattr(os, "sched_setaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) >= local_ranks:
        os.sched_setaffinity(0, {cores[local_rank]})


def launched() -> bool:
    """Whether this process is one rank of several started by torchrun."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", "0"))


def from_environment(device: torch.device) -> Group:
    """The group torchrun's environment describes, or :class:`Single` outside torchrun."""
    return ProcessGroup(device) if launched() else Single()
