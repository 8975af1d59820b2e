"""The one place that knows about devices: resolving names and moving env data."""

from __future__ import annotations

import re

import numpy as np
import torch

from rlcli.config.errors import single


def resolve_device(name: str, *, source: str | None = None) -> torch.device:
    """``auto`` -> CUDA when available, else CPU; a CUDA name without CUDA is a config error."""
    if not re.fullmatch(r"auto|cpu|cuda(:[0-9]+)?", name):
        raise single(source, f"unknown device {name!r}; allowed: auto, cpu, cuda, cuda:N", path="run.device")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise single(
                source,
                f'device {name!r} requested but CUDA is not available here; use "cpu" or "auto"',
                path="run.device",
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise single(
                source, f"device {name!r}: only {torch.cuda.device_count()} CUDA device(s) present", path="run.device"
            )
    return device


class HostToDevice:
    """Copies numpy batches to the device through one reused (pinned, on CUDA) host buffer."""

    def __init__(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device):
        self.device = device
        self.on_cuda = device.type == "cuda"
        self.staging = torch.empty(shape, dtype=dtype, pin_memory=self.on_cuda)

    def __call__(self, array: np.ndarray) -> torch.Tensor:
        if not self.on_cuda:
            return torch.as_tensor(array, dtype=self.staging.dtype)
        self.staging.copy_(torch.from_numpy(array))
        return self.staging.to(self.device, non_blocking=True)
