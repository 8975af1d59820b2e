"""Advantage Actor-Critic, the synchronous variant of A3C (Mnih et al., 2016)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from gymnasium import spaces as gspaces

from rlcli import keys
from rlcli.advantages import masked_mean, normalized_advantage, prepare_rollout, valid_rows
from rlcli.config.algos import A2CConfig
from rlcli.models.actor_critic import ActorCritic, build_actor_critic
from rlcli.normalization import RewardScaler
from rlcli.optim import GradientStep
from rlcli.timing import Timer

if TYPE_CHECKING:
    # Only a type here.
    from tensordict import TensorDict


CONFIG = A2CConfig
SUPPORTS = {"observation": (gspaces.Box,), "action": (gspaces.Discrete, gspaces.Box)}
# What a2c_loss reads.
LOSS_KEYS = (keys.INPUT, keys.ACTION, keys.ADVANTAGE, keys.VALUE_TARGET)
PHASES = ("update.advantage", "update.forward", "update.backward", "update.optimizer")
METRICS = ("loss/policy", "loss/value", "loss/entropy", "loss/total", "optim/lr")


def a2c_loss(agent: ActorCritic, batch: TensorDict, *, normalize_advantage: bool) -> dict[str, torch.Tensor]:
    """Policy-gradient loss, value loss and entropy of a batch.

    Reads ``input``, ``action``, ``advantage`` and ``value_target`` (each [B, ...]), and ``valid``
    ([B] bool) when present: every mean (and the advantage normalization) is then over the valid
    rows only, and a batch without any is a loss of 0. Returns ``loss/policy``, ``loss/value``
    and ``loss/entropy`` (the mean entropy).
    """
    log_prob, entropy, value = agent.evaluate(batch[keys.INPUT], batch[keys.ACTION])
    valid = batch.get(keys.VALID, None)
    mean = masked_mean(valid)
    advantage = batch[keys.ADVANTAGE]
    if normalize_advantage:
        advantage = normalized_advantage(advantage, valid)
    return {
        "loss/policy": -mean(log_prob * advantage),
        "loss/value": mean((value - batch[keys.VALUE_TARGET]).square()),
        "loss/entropy": mean(entropy),
    }


class A2C:
    """A2C's learning step: advantages, then one gradient step per rollout."""

    def __init__(self, cfg: A2CConfig, *, agent: ActorCritic, reward_scaler: RewardScaler, optim, iterations: int,
                 group=None):
        self.cfg = cfg
        self.agent = agent
        self.reward_scaler = reward_scaler
        self.step = GradientStep(optim, agent.parameters(), iterations, group)

    def act(self, observation: torch.Tensor, generator: torch.Generator) -> TensorDict:
        """``action``, ``log_prob`` and ``value`` for raw ``observation`` ([N, *obs])."""
        return self.agent.act(observation, generator)

    def policy(self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator) -> torch.Tensor:
        """Evaluation actions for raw ``observation`` ([N, *obs]): the mode or a sample, never clipped."""
        return self.agent.actions(observation, deterministic=deterministic, generator=generator)

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """:func:`a2c_loss` terms of a batch plus ``loss/total``, the scalar to minimise."""
        cfg = self.cfg
        terms = a2c_loss(self.agent, batch, normalize_advantage=cfg.normalize_advantage)
        terms["loss/total"] = (terms["loss/policy"] + cfg.value_coef * terms["loss/value"]
                               - cfg.entropy_coef * terms["loss/entropy"])
        return terms

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Advantages, one gradient step on the valid samples of ``batch``, then the statistics update."""
        cfg = self.cfg
        lr = self.step.lr
        with timer.phase("update.advantage"):
            prepare_rollout(self.agent, self.reward_scaler, batch, gamma=cfg.gamma, lam=cfg.gae_lambda)
        # Every row, invalid ones masked in the loss: a batch of only reset steps (one step per env,
        # every env just reset) is a loss of 0, not the NaN of an empty mean.
        flat = batch.select(*LOSS_KEYS, keys.VALID).reshape(-1)
        with timer.phase("update.forward"):
            terms = self.loss(flat)
        # Across ranks each valid row weighs the same, whatever each rank's count of them.
        self.step(terms["loss/total"], timer, rows=flat[keys.VALID].sum())
        self.step.end_iteration()
        # Only now: the update had to see the inputs the rollout was collected with.
        self.agent.obs_norm.observe(batch[keys.OBSERVATION], batch[keys.VALID])
        return {name: float(value.detach()) for name, value in terms.items()} | {"optim/lr": lr}

    def minibatch(self, batch: TensorDict, size: int, generator: torch.Generator) -> TensorDict:
        """``size`` random valid rows of ``batch`` after its advantages are written."""
        cfg = self.cfg
        prepare_rollout(self.agent, self.reward_scaler, batch, gamma=cfg.gamma, lam=cfg.gae_lambda)
        flat = valid_rows(batch, *LOSS_KEYS)
        return flat[torch.randint(flat.batch_size[0], (size,), generator=generator, device=flat.device)]

    def state_dict(self, *, replay: bool = True) -> dict:
        return {"step": self.step.state_dict(), "reward_scaler": self.reward_scaler.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.step.load_state_dict(state["step"])
        self.reward_scaler.load_state_dict(state["reward_scaler"])


def build(cfg: A2CConfig, *, spaces: tuple[gspaces.Space, gspaces.Space], network, env, collector, optim,
          device: torch.device, seed: int, run_folder=None, source=None, group=None) -> A2C:
    """A2C with an actor-critic sized from ``spaces`` = (observation space, action space).

    ``network``, ``env``, ``collector`` and ``optim`` are the run's sections. A2C draws no
    random numbers of its own, so ``seed`` is unused.
    """
    agent = build_actor_critic(network, env, *spaces, group=group).to(device)
    reward_scaler = RewardScaler(env.num_envs, gamma=cfg.gamma, enabled=env.normalize_reward, group=group).to(device)
    return A2C(cfg, agent=agent, reward_scaler=reward_scaler, optim=optim, iterations=collector.iterations,
               group=group)
