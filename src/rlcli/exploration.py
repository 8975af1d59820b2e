"""Exploration noise for deterministic continuous-control actors (TD3, DDPG).

Noise scales are fractions of each action dimension's half-range, so 0.1 means the
same on Pendulum's [-2, 2] as on MuJoCo's [-1, 1]; noisy actions are clipped
back into the bounds.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

NoiseType = Literal["gaussian", "ou"]


class ActionNoise(nn.Module):
    """Gaussian or Ornstein-Uhlenbeck noise for N envs, added to actions in env units.

    The Ornstein-Uhlenbeck process (Uhlenbeck & Ornstein, 1930; used by DDPG,
    Lillicrap et al., 2016) keeps one state per env, ``x += theta * (0 - x) * dt
    + scale * sqrt(dt) * N(0, 1)``, saved with the algorithm; it runs on across
    episode ends.
    """

    def __init__(
        self,
        kind: NoiseType,
        *,
        scale: float,
        num_envs: int,
        half_range: torch.Tensor,
        theta: float = 0.15,
        dt: float = 1e-2,
    ):
        super().__init__()
        self.kind, self.scale, self.theta, self.dt = kind, scale, theta, dt
        self.register_buffer("half_range", half_range.clone())
        self.register_buffer("state", torch.zeros(num_envs, *half_range.shape))

    def forward(self, action: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """``action`` [N, A] plus one draw of noise, in env units (not yet clipped)."""
        draw = torch.randn(action.shape, generator=generator, device=action.device, dtype=action.dtype)
        if self.kind == "gaussian":
            unit = self.scale * draw
        else:
            self.state.add_(-self.theta * self.state * self.dt + self.scale * self.dt**0.5 * draw)
            unit = self.state
        return action + unit * self.half_range


def uniform_actions(low: torch.Tensor, high: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
    """``count`` actions [count, A] drawn uniformly in the Box ``[low, high]`` (an off-policy warm-up)."""
    unit = torch.rand((count, *low.shape), generator=generator, device=low.device)
    return low + unit * (high - low)


class ActionBounds:
    """A Box action space's bounds as float32 tensors on the training device.

    What the off-policy actors share: uniform warm-up actions, and clipping of noisy actions
    back into the bounds, so that what is stored is what the env executed.
    """

    def __init__(self, space, device: torch.device):
        self.low = torch.as_tensor(space.low, dtype=torch.float32, device=device)
        self.high = torch.as_tensor(space.high, dtype=torch.float32, device=device)

    def uniform(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """``count`` actions [count, A] drawn uniformly in the bounds."""
        return uniform_actions(self.low, self.high, count, generator)

    def clip(self, action: torch.Tensor) -> torch.Tensor:
        """``action`` [N, A] clipped into the bounds, dimension by dimension."""
        return torch.minimum(torch.maximum(action, self.low), self.high)
