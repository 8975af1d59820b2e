"""Running observation normalization and reward scaling, kept as module state.

Both are ``nn.Module`` buffers, so their statistics are saved and restored
with the model and a trained policy sees the inputs it was trained on.
"""

from __future__ import annotations

import torch
from torch import nn


class RunningMeanStd(nn.Module):
    """Running mean and variance by Chan et al.'s parallel update."""

    def __init__(self, shape: tuple[int, ...] = ()):
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(1e-4, dtype=torch.float64))

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        """Fold ``batch`` ([B, *shape]) into the statistics."""
        batch = batch.to(torch.float64)
        n = batch.shape[0]
        mean = batch.mean(0)
        var = batch.var(0, unbiased=False)
        delta = mean - self.mean
        total = self.count + n
        self.mean += delta * n / total
        m2 = self.var * self.count + var * n + delta.square() * self.count * n / total
        self.var.copy_(m2 / total)
        self.count.copy_(total)


class ObservationNormalizer(nn.Module):
    """``clip((obs - mean) / std)`` with running statistics; identity when disabled."""

    def __init__(self, shape: tuple[int, ...], *, enabled: bool, clip: float):
        super().__init__()
        self.enabled = enabled
        self.clip = clip
        self.stats = RunningMeanStd(shape)

    @torch.no_grad()
    def forward(self, obs: torch.Tensor, *, update: torch.Tensor | bool = False) -> torch.Tensor:
        """Normalize ``obs`` ([B, *shape]); ``update`` (True or a [B] bool mask) first folds
        those rows into the statistics."""
        if not self.enabled:
            return obs
        if isinstance(update, torch.Tensor):
            if update.any():
                self.stats.update(obs[update])
        elif update:
            self.stats.update(obs)
        std = (self.stats.var + 1e-8).sqrt()
        return ((obs - self.stats.mean) / std).clamp_(-self.clip, self.clip).to(obs.dtype)


class RewardScaler(nn.Module):
    """Divide rewards by the running std of the discounted return (as in PPO's reference code).

    The reward is not centred: shifting it would change which policy is optimal
    when episodes end early.
    """

    def __init__(self, num_envs: int, *, gamma: float, enabled: bool, clip: float = 10.0):
        super().__init__()
        self.enabled = enabled
        self.gamma = gamma
        self.clip = clip
        self.stats = RunningMeanStd(())
        self.register_buffer("returns", torch.zeros(num_envs, dtype=torch.float64))

    @torch.no_grad()
    def forward(self, reward: torch.Tensor, done: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """Scale ``reward`` ([N] float) and reset the return of envs whose episode ended ([N] bool).

        Envs where ``valid`` ([N] bool) is False took no real step and leave the statistics alone.
        """
        if not self.enabled:
            return reward
        if valid is None:
            valid = torch.ones_like(done)
        self.returns.copy_(torch.where(valid, self.returns * self.gamma + reward, self.returns))
        if valid.any():
            self.stats.update(self.returns[valid])
        self.returns.masked_fill_(done, 0.0)
        scaled = reward / (self.stats.var + 1e-8).sqrt()
        return scaled.clamp_(-self.clip, self.clip).to(reward.dtype)
