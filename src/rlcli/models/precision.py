"""``run.precision = "bf16"``: the networks of an agent run their forward passes under bfloat16
autocast, in place.

Only the networks are wrapped: each outermost MLP, ensemble of MLPs and CNN of the agent (the
modules :mod:`rlcli.models.compile` compiles, and the CNN encoders around theirs). Inside one,
autocast runs matrix products and convolutions in bfloat16; what leaves it is cast back to
float32. So the weights, their gradients and the optimizer state stay float32, and everything
between and after the networks (distributions, log-probabilities, value targets, advantages,
losses, running statistics, the memory cores) computes in float32 as it does without bf16.
The backward of each network runs in the dtypes its forward chose (autograd records them).
"""

from __future__ import annotations

import types

import torch
from torch import nn

from rlcli.models.encoders import _Pixels
from rlcli.models.ensemble import EnsembleMLP

NETWORKS = (nn.Sequential, EnsembleMLP, _Pixels)


def autocast_networks(agent: nn.Module, dtype: torch.dtype, device: torch.device) -> int:
    """Run every outermost network of ``agent`` under ``dtype`` autocast on ``device``'s type, its floating
    outputs cast to float32; returns how many were wrapped. ``state_dict`` keys are unchanged."""
    candidates = [m for m in agent.modules() if isinstance(m, NETWORKS)]
    inner = {id(sub) for m in candidates for sub in m.modules() if sub is not m}
    wrapped = 0
    for module in candidates:
        if id(module) in inner:
            continue
        # Bound to the instance (a deep copy binds to the copy) and calling the class's forward, so
        # that torch.compile, applied after, compiles the autocast region too (mypy refuses any assignment
        # to a method; this one is the point).
        module.forward = types.MethodType(  # type: ignore[method-assign]
            _autocast_forward(type(module).forward, dtype, device.type), module
        )
        wrapped += 1
    return wrapped


def _autocast_forward(forward, dtype: torch.dtype, device_type: str):
    def run(self, *args, **kwargs):
        with torch.autocast(device_type, dtype=dtype):
            out = forward(self, *args, **kwargs)
        return _float32(out)

    return run


def _float32(value):
    if isinstance(value, torch.Tensor):
        return value.float() if value.is_floating_point() and value.dtype != torch.float32 else value
    if isinstance(value, tuple):
        return tuple(_float32(item) for item in value)
    return value


def bf16_problem(device: torch.device) -> str | None:
    """Why ``device`` cannot run ``precision = "bf16"`` well, or None when it can."""
    if device.type == "cuda":
        major, _ = torch.cuda.get_device_capability(device)
        if major >= 8:
            return None
        return f"{torch.cuda.get_device_name(device)} has no bfloat16 arithmetic (it needs compute capability 8.0+)"
    native = (
        getattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)()
        or getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)()
    )
    if native:
        return None
    return "this CPU has no bfloat16 instructions (AVX512-BF16 or AMX): bf16 would be emulated, slower than fp32"
