"""State-value critics."""

from __future__ import annotations

import torch
from torch import nn


class ValueCritic(nn.Module):
    """V(s): an MLP with one output, squeezed to shape ``[*batch]``."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs).squeeze(-1)
