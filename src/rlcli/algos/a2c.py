"""Advantage Actor-Critic, the synchronous variant of A3C (Mnih et al., 2016)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import torch
from gymnasium import spaces as gspaces
from pydantic import BaseModel, ConfigDict, Field

from rlcli import keys
from rlcli.advantages import add_gae
from rlcli.models.actor_critic import ActorCritic, build_actor_critic
from rlcli.optim import GradientStep
from rlcli.timing import Timer

if TYPE_CHECKING:
    # Only a type here: importing tensordict costs ~1 s, which `rlcli validate` need not pay.
    from tensordict import TensorDict


class A2CConfig(BaseModel):
    # Defaults follow Stable-Baselines3's A2C defaults (5-step returns, RMSprop in the preset).
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: Literal["a2c"] = Field(description="Advantage Actor-Critic.")
    gamma: float = Field(0.99, ge=0, le=1, description="Discount factor.")
    gae_lambda: float = Field(1.0, ge=0, le=1, description="GAE lambda; 1 gives n-step returns.")
    entropy_coef: float = Field(0.0, ge=0, description="Weight of the entropy bonus.")
    value_coef: float = Field(0.5, ge=0, description="Weight of the value loss.")
    normalize_advantage: bool = Field(False, description="Normalize advantages over the batch.")


CONFIG = A2CConfig
SUPPORTS = {"observation": (gspaces.Box,), "action": (gspaces.Discrete, gspaces.Box)}


def a2c_loss(agent: ActorCritic, batch: TensorDict, *, normalize_advantage: bool) -> dict[str, torch.Tensor]:
    """Policy-gradient loss, value loss and entropy of a batch.

    Reads ``observation``, ``action``, ``advantage`` and ``value_target`` (each [B, ...]).
    Returns ``loss/policy``, ``loss/value`` and ``loss/entropy`` (the mean entropy).
    """
    log_prob, entropy, value = agent.evaluate(batch[keys.OBSERVATION], batch[keys.ACTION])
    advantage = batch[keys.ADVANTAGE]
    if normalize_advantage and advantage.numel() > 1:
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    return {
        "loss/policy": -(log_prob * advantage).mean(),
        "loss/value": (value - batch[keys.VALUE_TARGET]).square().mean(),
        "loss/entropy": entropy.mean(),
    }


class A2C:
    """A2C's update: one gradient step per rollout."""

    def __init__(self, cfg: A2CConfig, *, agent: ActorCritic, optim, iterations: int):
        self.cfg = cfg
        self.agent = agent
        self.step = GradientStep(optim, agent.parameters(), iterations)

    def seed(self, seed: int) -> None:
        """A2C draws no random numbers of its own."""

    def advantages(self, batch: TensorDict) -> TensorDict:
        """Write ``advantage`` and ``value_target`` into ``batch`` ([T, N])."""
        return add_gae(batch, gamma=self.cfg.gamma, lam=self.cfg.gae_lambda)

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """:func:`a2c_loss` terms of a batch plus ``loss/total``, the scalar to minimise."""
        cfg = self.cfg
        terms = a2c_loss(self.agent, batch, normalize_advantage=cfg.normalize_advantage)
        terms["loss/total"] = (terms["loss/policy"] + cfg.value_coef * terms["loss/value"]
                               - cfg.entropy_coef * terms["loss/entropy"])
        return terms

    def update(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """One gradient step on the valid samples of ``batch``."""
        flat = batch[batch[keys.VALID]]
        with timer.phase("update.forward"):
            terms = self.loss(flat)
        self.step(terms["loss/total"], timer)
        self.step.end_iteration()
        return {name: float(value.detach()) for name, value in terms.items()}

    def state_dict(self) -> dict:
        return self.step.state_dict()


def build(cfg: A2CConfig, *, spaces: tuple[gspaces.Space, gspaces.Space], network, env, optim,
          iterations: int, device: torch.device) -> A2C:
    """A2C with an actor-critic sized from ``spaces`` = (observation space, action space).

    ``network``, ``env`` and ``optim`` are the run's NetworkConfig, EnvConfig and OptimConfig.
    """
    agent = build_actor_critic(network, env, *spaces).to(device)
    return A2C(cfg, agent=agent, optim=optim, iterations=iterations)
