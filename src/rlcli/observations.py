"""Observations in their space's own dtype: host buffers the collector writes into, the specs a
replay buffer stores, batches for acting, and the checks of which spaces rlcli can read.

A ``Box`` observation keeps its dtype (uint8 frames stay uint8 on the host and in replay), a
``Discrete`` one is an int64 index, and a ``Dict`` one is a TensorDict with one entry per key.
Conversion to float (and the 1/255 scaling of frames) happens inside the encoder, on the device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from rlcli.runtime.devices import HostToDevice

Leaf = tuple[tuple[int, ...], torch.dtype]
"""A stored observation tensor's per-row shape and dtype."""


def shape_of(space: spaces.Space) -> tuple[int, ...]:
    """The shape of ``space``'s samples, for a space that has one (gymnasium's Graph and Sequence have none,
    and rlcli reads neither)."""
    assert space.shape is not None, f"{space} has no shape"
    return tuple(space.shape)


def torch_dtype(space: spaces.Space) -> torch.dtype:
    """The dtype observations of a Box or Discrete ``space`` are stored in."""
    if isinstance(space, spaces.Discrete):
        return torch.int64
    return torch.from_numpy(np.empty(0, dtype=space.dtype)).dtype


def leaves(space: spaces.Space) -> dict[str, Leaf] | Leaf:
    """Shape and dtype of one observation: one pair, or for a Dict one per key."""
    if isinstance(space, spaces.Dict):
        return {name: (shape_of(sub), torch_dtype(sub)) for name, sub in space.spaces.items()}
    return shape_of(space), torch_dtype(space)


def spec_entries(key: str, space: spaces.Space) -> dict[Any, Leaf]:
    """Replay spec entries of the observation stored under ``key``: ``{key: leaf}``, or for a Dict
    ``{(key, name): leaf}`` per name (nested keys of a TensorDict)."""
    found = leaves(space)
    if isinstance(found, dict):
        return {(key, name): leaf for name, leaf in found.items()}
    return {key: found}


def host_buffer(space: spaces.Space, leading: Sequence[int]):
    """Zeros for ``leading`` observations: a tensor, or for a Dict a TensorDict of them."""
    found = leaves(space)
    if isinstance(found, dict):
        from tensordict import TensorDict

        return TensorDict(
            {name: torch.zeros(*leading, *shape, dtype=dtype) for name, (shape, dtype) in found.items()},
            batch_size=list(leading),
        )
    shape, dtype = found
    return torch.zeros(*leading, *shape, dtype=dtype)


def numpy_view(buffer) -> np.ndarray | dict[str, np.ndarray]:
    """numpy arrays sharing ``buffer``'s memory (a dict of them for a TensorDict)."""
    if isinstance(buffer, torch.Tensor):
        return buffer.numpy()
    return {name: value.numpy() for name, value in buffer.items()}


def write(view, index, observation) -> None:
    """``view[index] = observation`` for a numpy view of :func:`numpy_view` (a Dict observation key by key)."""
    if isinstance(view, dict):
        for name, array in view.items():
            array[index] = observation[name]
    else:
        view[index] = observation


def stack(observations: Sequence[Any]):
    """Single observations stacked along a new first axis (a dict of stacks for Dict observations)."""
    if isinstance(observations[0], dict):
        return {name: np.stack([obs[name] for obs in observations]) for name in observations[0]}
    return np.stack(observations)


def copy(observation):
    """An owned copy of a batched observation (the env may reuse its arrays)."""
    if isinstance(observation, dict):
        return {name: np.array(value, copy=True) for name, value in observation.items()}
    return np.array(observation, copy=True)


def to_saved(observation):
    """A batched observation as checkpoint tensors (a dict of them for a Dict space)."""
    if isinstance(observation, dict):
        return {name: torch.from_numpy(np.array(value, copy=True)) for name, value in observation.items()}
    return torch.from_numpy(np.array(observation, copy=True))


def from_saved(saved):
    """The inverse of :func:`to_saved`."""
    if isinstance(saved, dict):
        return {name: value.numpy().copy() for name, value in saved.items()}
    return saved.numpy().copy()


class ToDevice:
    """Batched env observations ([N, ...] numpy, or a dict of them) as tensors on ``device`` in the
    space's own dtype, through reused (pinned, on CUDA) host buffers."""

    def __init__(self, space: spaces.Space, num_envs: int, device: torch.device):
        found = leaves(space)
        self.num_envs = num_envs
        if isinstance(found, dict):
            self.copies: dict[str, HostToDevice] | HostToDevice = {
                name: HostToDevice((num_envs, *shape), dtype, device) for name, (shape, dtype) in found.items()
            }
        else:
            shape, dtype = found
            self.copies = HostToDevice((num_envs, *shape), dtype, device)

    def __call__(self, observation):
        if isinstance(self.copies, dict):
            from tensordict import TensorDict

            return TensorDict(
                {name: move(observation[name]) for name, move in self.copies.items()}, batch_size=[self.num_envs]
            )
        return self.copies(observation)


def batch_tensor(space: spaces.Space, observations: Sequence[Any], device: torch.device):
    """Single observations as one batch on ``device`` in the space's own dtype (a TensorDict for a Dict)."""
    stacked = stack(observations)
    if isinstance(stacked, dict):
        from tensordict import TensorDict

        # stack gives a dict for the observations of a Dict space.
        assert isinstance(space, spaces.Dict)
        sub = space.spaces
        return TensorDict(
            {
                name: torch.as_tensor(value, dtype=torch_dtype(sub[name]), device=device)
                for name, value in stacked.items()
            },
            batch_size=[len(observations)],
            device=device,
        )
    return torch.as_tensor(stacked, dtype=torch_dtype(space), device=device)
