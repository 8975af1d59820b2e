"""Synthetic replay transitions that the buffer suite and ``benchmarks/replay_memory.py`` feed."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.replay.storage import Spec

# The bars' data shape: a MuJoCo-sized transition (HalfCheetah: 17-dim observation, 6-dim action).
BUFFER_SPEC: Spec = {
    keys.OBSERVATION: ((17,), torch.float32),
    keys.NEXT_OBSERVATION: ((17,), torch.float32),
    keys.ACTION: ((6,), torch.float32),
    keys.REWARD: ((), torch.float32),
    keys.TERMINATED: ((), torch.bool),
}


def random_transitions(shape: tuple[int, ...], generator: torch.Generator) -> TensorDict:
    """A batch of ``shape`` random transitions of :data:`BUFFER_SPEC`, all valid."""
    data = {}
    for key, (item, dtype) in BUFFER_SPEC.items():
        if dtype == torch.bool:
            data[key] = torch.rand(*shape, *item, generator=generator) < 0.01
        else:
            data[key] = torch.randn(*shape, *item, generator=generator)
    data[keys.VALID] = torch.ones(shape, dtype=torch.bool)
    return TensorDict(data, batch_size=list(shape))
