"""Running observation normalization and reward scaling, kept as module state.

Both are ``nn.Module`` buffers, so their statistics are saved and restored
with the model and a trained policy sees the inputs it was trained on.
Statistics change only when an algorithm's ``learn`` folds a batch in, never
while acting: a rollout is normalized with one frozen set of statistics.
"""

from __future__ import annotations

import torch
from torch import nn

from rlcli.runtime.distributed import Group, Single


class RunningMeanStd(nn.Module):
    """Running mean and variance by Chan et al.'s parallel update; across the ranks of ``group``
    each update takes in every rank's batch, so the statistics stay the same on every rank."""

    # Buffers, declared so the type checker reads them as tensors, not as nn.Module.__getattr__'s union.
    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, shape: tuple[int, ...] = (), *, group: Group | None = None):
        super().__init__()
        self.group = group or Single()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(1e-4, dtype=torch.float64))

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        """Fold ``batch`` ([B, *shape]) into the statistics; across ranks, every rank's batch in rank order.

        Each rank sends the count, mean and variance of its own batch (one all-gather), and every
        rank folds them in with the same pairwise update, so no sum of squares ever cancels.
        """
        n = batch.shape[0]
        flat = batch.to(torch.float64).reshape(n, self.mean.numel())
        if n:
            mean, var = flat.mean(0), flat.var(0, unbiased=False)
        else:
            mean = var = flat.new_zeros(flat.shape[1])
        rows = self.group.gather_rows(torch.cat([flat.new_tensor([float(n)]), mean, var]))
        width = flat.shape[1]
        for row, count in zip(rows, rows[:, 0].tolist()):
            if count > 0:
                self._fold(count, row[1 : 1 + width].view_as(self.mean), row[1 + width :].view_as(self.var))

    def _fold(self, n: float, mean: torch.Tensor, var: torch.Tensor) -> None:
        """Chan et al.'s update with a batch of ``n`` rows, its ``mean`` and (biased) ``var``."""
        delta = mean - self.mean
        total = self.count + n
        self.mean += delta * n / total
        m2 = self.var * self.count + var * n + delta.square() * self.count * n / total
        self.var.copy_(m2 / total)
        self.count.copy_(total)


class ObservationNormalizer(nn.Module):
    """``clip((obs - mean) / std)`` with running statistics; identity when disabled."""

    def __init__(self, shape: tuple[int, ...], *, enabled: bool, clip: float, group: Group | None = None):
        super().__init__()
        self.enabled = enabled
        self.clip = clip
        self.stats = RunningMeanStd(shape, group=group)

    @torch.no_grad()
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Normalize ``obs`` ([*B, *shape]) with the current statistics (``obs`` itself when disabled)."""
        if not self.enabled:
            return obs
        std = (self.stats.var + 1e-8).sqrt()
        normalized = ((obs - self.stats.mean) / std).clamp_(-self.clip, self.clip)
        # Integer observations (frames) become float32 here; float ones keep their dtype.
        return normalized.to(obs.dtype if obs.is_floating_point() else torch.float32)

    @torch.no_grad()
    def observe(self, obs: torch.Tensor, valid: torch.Tensor | None = None) -> None:
        """Fold ``obs`` ([T, N, *shape]) into the statistics, skipping rows where ``valid`` ([T, N]) is False."""
        if not self.enabled:
            return
        rows = obs.reshape(-1, *self.stats.mean.shape)
        if valid is not None and not bool(valid.all()):
            rows = rows[valid.reshape(-1)]
        self.stats.update(rows)


class KeyedNormalizer(nn.Module):
    """One :class:`ObservationNormalizer` per key of a TensorDict observation (a team agent's ``observation``
    and its centralized critic's ``critic`` input), with the same calls as one."""

    def __init__(self, normalizers: dict[str, ObservationNormalizer]):
        super().__init__()
        self.normalizers = nn.ModuleDict(normalizers)
        # The same modules, typed: a ModuleDict's items are plain Modules to the type checker.
        self.by_key: dict[str, ObservationNormalizer] = dict(normalizers)

    @property
    def enabled(self) -> bool:
        return any(norm.enabled for norm in self.by_key.values())

    @torch.no_grad()
    def forward(self, obs):
        """``obs`` (a TensorDict [*B]) with each key normalized by its own statistics."""
        out = obs.copy()
        for key, norm in self.by_key.items():
            # Acting reads the policy's key alone: the critic's input may be absent.
            if key in obs.keys():
                out.set(key, norm(obs.get(key)))
        return out

    @torch.no_grad()
    def observe(self, obs, valid: torch.Tensor | None = None) -> None:
        for key, norm in self.by_key.items():
            norm.observe(obs.get(key), valid)


def clip_rewards(reward: torch.Tensor, bound: float | None) -> torch.Tensor:
    """``reward`` clamped to [-bound, bound] (a new tensor), or ``reward`` itself when ``bound`` is None.

    What the algorithm learns from, never what the return column counts (``[env] clip_reward``).
    """
    return reward if bound is None else reward.clamp(-bound, bound)


class RewardScaler(nn.Module):
    """Divide rewards by the running std of the discounted return (as in PPO's reference code).

    The reward is not centred: shifting it would change which policy is optimal
    when episodes end early.
    """

    returns: torch.Tensor

    def __init__(self, num_envs: int, *, gamma: float, enabled: bool, clip: float = 10.0, group: Group | None = None):
        super().__init__()
        self.enabled = enabled
        self.gamma = gamma
        self.clip = clip
        self.stats = RunningMeanStd((), group=group)
        self.register_buffer("returns", torch.zeros(num_envs, dtype=torch.float64))

    @torch.no_grad()
    def observe(self, reward: torch.Tensor, done: torch.Tensor, valid: torch.Tensor) -> None:
        """Fold the discounted returns of a ``[T, N]`` rollout into the statistics.

        Args:
            reward: [T, N] float, raw rewards.
            done: [T, N] bool, the episode ended at that step (its return restarts).
            valid: [T, N] bool; invalid steps took no real step and leave the return alone.
        """
        if not self.enabled:
            return
        returns = torch.empty(reward.shape, dtype=torch.float64, device=reward.device)
        running = self.returns.to(reward.device)
        for t in range(reward.shape[0]):
            running = torch.where(valid[t], running * self.gamma + reward[t], running)
            returns[t] = running
            running = running.masked_fill(done[t], 0.0)
        self.returns.copy_(running)
        self.stats.update(returns[valid])

    @torch.no_grad()
    def forward(self, reward: torch.Tensor) -> torch.Tensor:
        """``reward`` (any shape) divided by the return's running std and clipped; unchanged when disabled."""
        if not self.enabled:
            return reward
        scaled = reward / (self.stats.var + 1e-8).sqrt()
        return scaled.clamp_(-self.clip, self.clip).to(reward.dtype)
