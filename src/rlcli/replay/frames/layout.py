"""What a frame-stack replay stores per slot, what that costs, and how a transition's two stacks are
rebuilt from the stored frames (the layout :mod:`rlcli.replay.frames` describes).

The ring is time-major: slot s holds step s of every env, flat row ``s * N + env``; a slot keeps
the newest frame of the step's observation and whether the step starts an episode.
"""

from __future__ import annotations

import math

import torch

from rlcli import keys
from rlcli.config.fields import ReplayConfig
from rlcli.replay.storage import Spec
from rlcli.replay.sumtree import SumTree

STACKS = (keys.OBSERVATION, keys.NEXT_OBSERVATION)
"""The spec keys a slot does not store: they are rebuilt."""
FRAME, FIRST = "frame", "first"
"""A slot's keys for the newest frame and for whether its step starts an episode."""


def stack_shape(spec: Spec, stack: int | None) -> tuple[int, ...]:
    """The observation's ``(S, H, W)`` (or ``(S, H, W, C)``) of ``spec``, checked against ``stack``."""
    shape, dtype = spec[keys.OBSERVATION]
    if len(shape) < 3 or dtype != torch.uint8:
        raise ValueError(f"a frame stack replay needs uint8 stacks (S, H, W), not {tuple(shape)} {dtype}")
    if stack is not None and stack != shape[0]:
        raise ValueError(f"stack {stack} does not match the observation's {shape[0]} frames")
    return tuple(shape)


def row_spec(spec: Spec, frame: tuple[int, ...]) -> Spec:
    """What a slot stores per env: the newest frame, whether the step starts an episode, whether it
    can be sampled (stored as ``valid``), and every spec key but the stacks."""
    rows = {key: leaf for key, leaf in spec.items() if key not in STACKS}
    return {FRAME: (frame, torch.uint8), FIRST: ((), torch.bool), keys.VALID: ((), torch.bool), **rows}


def frame_storage_bytes(cfg: ReplayConfig, spec: Spec, *, num_envs: int, stack: int | None = None) -> int:
    """Bytes a :class:`FrameStackBuffer` of ``cfg.capacity`` transitions allocates: ``capacity // num_envs``
    steps of ``num_envs`` rows, the last next observation of each env and, when prioritized, the sum-tree.

    ``spec`` is the per-transition spec (:func:`rlcli.replay.feed.transition_spec`); its stacks are not stored.
    """
    shape = stack_shape(spec, stack)
    rows = (cfg.capacity // num_envs) * num_envs
    per_row = sum(
        math.prod(item) * torch.empty((), dtype=dtype).element_size()
        for item, dtype in row_spec(spec, shape[1:]).values()
    )
    total = rows * per_row + num_envs * math.prod(shape)
    if cfg.prioritized:
        fanout, levels = SumTree.layout(rows)
        total += 8 * sum(fanout**level for level in range(1, levels + 1))
    return total


def rebuild_stacks(
    frame: torch.Tensor, first: torch.Tensor, index: torch.Tensor, *, stack: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(observation, next_observation) stacks [B, S, ...] uint8 of the flat rows ``index`` ([B] int64 on
    the storage's device), gathered at once from the ring's ``frame`` ([steps, N, ...] uint8) and
    ``first`` ([steps, N] bool) with ``stack`` S; exact for rows that can be sampled."""
    steps, n = frame.shape[:2]
    step, env = index // n, index % n
    # Steps s - S + 1 .. s + 1: the observation's frames, then the next observation's newest.
    back = torch.arange(-(stack - 1), 2, device=index.device)
    flat = (((step[:, None] + back) % steps) * n + env[:, None]).reshape(-1)
    frames = frame.reshape(-1, *frame.shape[2:]).index_select(0, flat).view(index.numel(), stack + 1, *frame.shape[2:])
    starts = first.reshape(-1).index_select(0, flat).view(index.numel(), stack + 1)
    return _masked(frames[:, :stack], starts[:, :stack]), _masked(frames[:, 1:], starts[:, 1:])


def _masked(frames: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
    """``frames`` [B, S, ...] of a stack's columns with each frame zeroed where an episode starts at a
    later column (``first`` [B, S]: whether each column's step starts one), as the env's reset does."""
    later = first[:, 1:].long()
    started_later = torch.flip(torch.cummax(torch.flip(later, [1]), 1).values, [1]) > 0
    keep = torch.cat([~started_later, torch.ones_like(started_later[:, :1])], 1)
    return frames * keep.view(*keep.shape, *([1] * (frames.dim() - 2))).to(frames.dtype)
