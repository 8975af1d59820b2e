"""Proximal Policy Optimization with the clipped surrogate (Schulman et al., 2017)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import torch
from gymnasium import spaces as gspaces
from pydantic import BaseModel, ConfigDict, Field

from rlcli import keys
from rlcli.advantages import add_gae
from rlcli.models.actor_critic import ActorCritic, build_actor_critic
from rlcli.optim import SCHEDULES, GradientStep
from rlcli.timing import Timer

if TYPE_CHECKING:
    # Only a type here: importing tensordict costs ~1 s, which `rlcli validate` need not pay.
    from tensordict import TensorDict


class PPOConfig(BaseModel):
    # Defaults follow Stable-Baselines3's PPO defaults (the values of the paper's
    # MuJoCo runs); presets override them with RL-Zoo's tuned values.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: Literal["ppo"] = Field(description="Proximal Policy Optimization.")
    gamma: float = Field(0.99, ge=0, le=1, description="Discount factor.")
    gae_lambda: float = Field(0.95, ge=0, le=1, description="GAE lambda (1: Monte Carlo, 0: TD(0)).")
    clip_epsilon: float = Field(0.2, gt=0, le=1, description="Clip range of the probability ratio.")
    clip_schedule: Literal["constant", "linear"] = Field(
        "constant", description="Decay of clip_epsilon over the run."
    )
    clip_value: float | None = Field(
        None, gt=0, description="Clip the value update to this distance from the old value (off when unset)."
    )
    entropy_coef: float = Field(0.0, ge=0, description="Weight of the entropy bonus.")
    value_coef: float = Field(0.5, ge=0, description="Weight of the value loss.")
    epochs: int = Field(10, ge=1, le=1000, description="Passes over each batch.")
    minibatch_size: int = Field(64, ge=2, description="Samples per gradient step.")
    normalize_advantage: bool = Field(True, description="Normalize advantages per minibatch.")
    target_kl: float | None = Field(
        None, gt=0, description="Stop the epochs of an update once the approximate KL exceeds this."
    )


CONFIG = PPOConfig
SUPPORTS = {"observation": (gspaces.Box,), "action": (gspaces.Discrete, gspaces.Box)}


def ppo_loss(
    agent: ActorCritic,
    batch: TensorDict,
    *,
    clip_epsilon: float,
    clip_value: float | None,
    normalize_advantage: bool,
) -> dict[str, torch.Tensor]:
    """Clipped-surrogate policy loss, value loss and entropy of one minibatch.

    Reads ``observation``, ``action``, ``log_prob``, ``value``, ``advantage`` and
    ``value_target`` (each [B, ...]). Returns ``loss/policy``, ``loss/value``,
    ``loss/entropy`` (the mean entropy, to be maximised) and the detached
    statistics ``stats/approx_kl`` and ``stats/clip_fraction``.
    """
    log_prob, entropy, value = agent.evaluate(batch[keys.OBSERVATION], batch[keys.ACTION])
    advantage = batch[keys.ADVANTAGE]
    if normalize_advantage:
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    log_ratio = log_prob - batch[keys.LOG_PROB]
    ratio = log_ratio.exp()
    surrogate = torch.min(ratio * advantage, ratio.clamp(1 - clip_epsilon, 1 + clip_epsilon) * advantage)
    target = batch[keys.VALUE_TARGET]
    if clip_value is None:
        value_loss = (value - target).square().mean()
    else:
        old = batch[keys.VALUE]
        clipped = old + (value - old).clamp(-clip_value, clip_value)
        value_loss = torch.max((value - target).square(), (clipped - target).square()).mean()
    with torch.no_grad():
        # Schulman's low-variance, unbiased KL estimator: (r - 1) - log r.
        approx_kl = ((ratio - 1) - log_ratio).mean()
        clip_fraction = ((ratio - 1).abs() > clip_epsilon).float().mean()
    return {
        "loss/policy": -surrogate.mean(),
        "loss/value": value_loss,
        "loss/entropy": entropy.mean(),
        "stats/approx_kl": approx_kl,
        "stats/clip_fraction": clip_fraction,
    }


class PPO:
    """PPO's update: ``epochs`` passes of shuffled minibatches over one rollout."""

    def __init__(self, cfg: PPOConfig, *, agent: ActorCritic, optim, iterations: int, device: torch.device):
        self.cfg = cfg
        self.agent = agent
        self.step = GradientStep(optim, agent.parameters(), iterations)
        self.clip_factor = SCHEDULES[cfg.clip_schedule]
        self.iterations = iterations
        self.done = 0
        self.clip_epsilon = cfg.clip_epsilon
        self.generator = torch.Generator(device=device)
        self.device = device

    def seed(self, seed: int) -> None:
        self.generator.manual_seed(seed)

    def advantages(self, batch: TensorDict) -> TensorDict:
        """Write ``advantage`` and ``value_target`` into ``batch`` ([T, N])."""
        return add_gae(batch, gamma=self.cfg.gamma, lam=self.cfg.gae_lambda)

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """:func:`ppo_loss` terms of a minibatch plus ``loss/total``, the scalar to minimise."""
        cfg = self.cfg
        terms = ppo_loss(self.agent, batch, clip_epsilon=self.clip_epsilon, clip_value=cfg.clip_value,
                         normalize_advantage=cfg.normalize_advantage)
        terms["loss/total"] = (terms["loss/policy"] + cfg.value_coef * terms["loss/value"]
                               - cfg.entropy_coef * terms["loss/entropy"])
        return terms

    def update(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """One optimisation round on ``batch``; returns the mean of each loss term and statistic."""
        cfg = self.cfg
        self.clip_epsilon = cfg.clip_epsilon * max(self.clip_factor(self.done / self.iterations), 1e-8)
        flat = batch[batch[keys.VALID]]
        size = flat.batch_size[0]
        sums: dict[str, torch.Tensor] = {}
        steps = 0
        stopped = False
        for _ in range(cfg.epochs):
            if stopped:
                break
            order = torch.randperm(size, generator=self.generator, device=self.device)
            for start in range(0, size, cfg.minibatch_size):
                index = order[start:start + cfg.minibatch_size]
                # A one-sample tail has no advantage spread to normalize by.
                if index.numel() < 2:
                    continue
                with timer.phase("update.forward"):
                    terms = self.loss(flat[index])
                if cfg.target_kl is not None and terms["stats/approx_kl"] > cfg.target_kl:
                    stopped = True
                    break
                self.step(terms["loss/total"], timer)
                for name, value in terms.items():
                    sums[name] = sums.get(name, 0.0) + value.detach()
                steps += 1
        self.step.end_iteration()
        self.done += 1
        stats = {name: float(total) / max(steps, 1) for name, total in sums.items()}
        stats["stats/gradient_steps"] = float(steps)
        stats["stats/clip_epsilon"] = self.clip_epsilon
        return stats

    def state_dict(self) -> dict:
        return self.step.state_dict()


def build(cfg: PPOConfig, *, spaces: tuple[gspaces.Space, gspaces.Space], network, env, optim,
          iterations: int, device: torch.device) -> PPO:
    """PPO with an actor-critic sized from ``spaces`` = (observation space, action space).

    ``network``, ``env`` and ``optim`` are the run's NetworkConfig, EnvConfig and OptimConfig.
    """
    agent = build_actor_critic(network, env, *spaces).to(device)
    return PPO(cfg, agent=agent, optim=optim, iterations=iterations, device=device)
