"""Proximal Policy Optimization with the clipped surrogate (Schulman et al., 2017)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from gymnasium import spaces as gspaces

from rlcli import keys
from rlcli.advantages import masked_mean, normalized_advantage, prepare_rollout, valid_rows
from rlcli.config.algos import PPOConfig
from rlcli.models.actor_critic import ActorCritic, build_actor_critic
from rlcli.normalization import RewardScaler
from rlcli.optim import SCHEDULES, GradientStep
from rlcli.timing import Timer

if TYPE_CHECKING:
    # Only a type here.
    from tensordict import TensorDict


CONFIG = PPOConfig
SUPPORTS = {"observation": (gspaces.Box,), "action": (gspaces.Discrete, gspaces.Box)}
# What ppo_loss reads.
LOSS_KEYS = (keys.INPUT, keys.ACTION, keys.LOG_PROB, keys.VALUE, keys.ADVANTAGE, keys.VALUE_TARGET)
PHASES = ("update.advantage", "update.forward", "update.backward", "update.optimizer")
METRICS = ("loss/policy", "loss/value", "loss/entropy", "loss/total", "stats/approx_kl",
           "stats/clip_fraction", "stats/gradient_steps", "stats/clip_epsilon", "optim/lr")


def ppo_loss(
    agent: ActorCritic,
    batch: TensorDict,
    *,
    clip_epsilon: float,
    clip_value: float | None,
    normalize_advantage: bool,
) -> dict[str, torch.Tensor]:
    """Clipped-surrogate policy loss, value loss and entropy of one minibatch.

    Reads ``input``, ``action``, ``log_prob``, ``value``, ``advantage`` and
    ``value_target`` (each [B, ...]), and ``valid`` ([B] bool) when present: every mean
    (and the advantage normalization) is then over the valid rows only. Returns
    ``loss/policy``, ``loss/value``, ``loss/entropy`` (the mean entropy, to be
    maximised) and the detached statistics ``stats/approx_kl`` and ``stats/clip_fraction``.
    """
    log_prob, entropy, value = agent.evaluate(batch[keys.INPUT], batch[keys.ACTION])
    valid = batch.get(keys.VALID, None)
    mean = masked_mean(valid)
    advantage = batch[keys.ADVANTAGE]
    if normalize_advantage:
        advantage = normalized_advantage(advantage, valid)
    log_ratio = log_prob - batch[keys.LOG_PROB]
    ratio = log_ratio.exp()
    surrogate = torch.min(ratio * advantage, ratio.clamp(1 - clip_epsilon, 1 + clip_epsilon) * advantage)
    target = batch[keys.VALUE_TARGET]
    if clip_value is None:
        value_loss = mean((value - target).square())
    else:
        old = batch[keys.VALUE]
        clipped = old + (value - old).clamp(-clip_value, clip_value)
        value_loss = mean(torch.max((value - target).square(), (clipped - target).square()))
    with torch.no_grad():
        # Schulman's low-variance, unbiased KL estimator: (r - 1) - log r.
        approx_kl = mean((ratio - 1) - log_ratio)
        clip_fraction = mean(((ratio - 1).abs() > clip_epsilon).float())
    return {
        "loss/policy": -mean(surrogate),
        "loss/value": value_loss,
        "loss/entropy": mean(entropy),
        "stats/approx_kl": approx_kl,
        "stats/clip_fraction": clip_fraction,
    }


class PPO:
    """PPO's learning step: advantages, then ``epochs`` passes of shuffled minibatches over one rollout."""

    def __init__(self, cfg: PPOConfig, *, agent: ActorCritic, reward_scaler: RewardScaler, optim,
                 iterations: int, device: torch.device, seed: int, group=None):
        self.cfg = cfg
        self.agent = agent
        self.reward_scaler = reward_scaler
        self.step = GradientStep(optim, agent.parameters(), iterations, group)
        self.clip_factor = SCHEDULES[cfg.clip_schedule]
        self.iterations = iterations
        self.done = 0
        self.clip_epsilon = cfg.clip_epsilon
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)
        self.device = device
        self.group = self.step.group

    def act(self, observation: torch.Tensor, generator: torch.Generator) -> TensorDict:
        """``action``, ``log_prob`` and ``value`` for raw ``observation`` ([N, *obs])."""
        return self.agent.act(observation, generator)

    def policy(self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator) -> torch.Tensor:
        """Evaluation actions for raw ``observation`` ([N, *obs]): the mode or a sample, never clipped."""
        return self.agent.actions(observation, deterministic=deterministic, generator=generator)

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """:func:`ppo_loss` terms of a minibatch plus ``loss/total``, the scalar to minimise."""
        cfg = self.cfg
        terms = ppo_loss(self.agent, batch, clip_epsilon=self.clip_epsilon, clip_value=cfg.clip_value,
                         normalize_advantage=cfg.normalize_advantage)
        terms["loss/total"] = (terms["loss/policy"] + cfg.value_coef * terms["loss/value"]
                               - cfg.entropy_coef * terms["loss/entropy"])
        return terms

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Advantages of the rollout, one optimisation round, then the statistics take in the rollout.

        Returns the mean of each loss term and statistic, and the learning rate used.
        """
        cfg = self.cfg
        lr = self.step.lr
        with timer.phase("update.advantage"):
            prepare_rollout(self.agent, self.reward_scaler, batch, gamma=cfg.gamma, lam=cfg.gae_lambda)
        self.clip_epsilon = cfg.clip_epsilon * max(self.clip_factor(self.done / self.iterations), 1e-8)
        # Every row, invalid ones masked in the loss: the same number of minibatches on every rank
        # (NEXT_STEP envs have a varying number of reset steps), so that ranks step together.
        flat = batch.select(*LOSS_KEYS, keys.VALID).reshape(-1)
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
                    minibatch = flat[index]
                    terms = self.loss(minibatch)
                # Decided on the ranks' mean KL, so that every rank stops at the same minibatch.
                if cfg.target_kl is not None and float(self.group.mean(terms["stats/approx_kl"])) > cfg.target_kl:
                    stopped = True
                    break
                # Across ranks each valid row weighs the same, whatever each rank's count of them.
                self.step(terms["loss/total"], timer, rows=minibatch[keys.VALID].sum())
                for name, value in terms.items():
                    sums[name] = sums.get(name, 0.0) + value.detach()
                steps += 1
        self.step.end_iteration()
        self.done += 1
        # Only now: the update had to see the inputs the rollout was collected with.
        self.agent.obs_norm.observe(batch[keys.OBSERVATION], batch[keys.VALID])
        stats = {name: float(total) / max(steps, 1) for name, total in sums.items()}
        stats["stats/gradient_steps"] = float(steps)
        stats["stats/clip_epsilon"] = self.clip_epsilon
        stats["optim/lr"] = lr
        return stats

    def minibatch(self, batch: TensorDict, size: int, generator: torch.Generator) -> TensorDict:
        """``size`` random valid rows of ``batch`` after its advantages are written."""
        cfg = self.cfg
        prepare_rollout(self.agent, self.reward_scaler, batch, gamma=cfg.gamma, lam=cfg.gae_lambda)
        flat = valid_rows(batch, *LOSS_KEYS)
        return flat[torch.randint(flat.batch_size[0], (size,), generator=generator, device=flat.device)]

    def state_dict(self, *, replay: bool = True) -> dict:
        return {"step": self.step.state_dict(), "generator": self.generator.get_state(), "done": self.done,
                "clip_epsilon": self.clip_epsilon, "reward_scaler": self.reward_scaler.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.step.load_state_dict(state["step"])
        self.generator.set_state(state["generator"])
        self.done, self.clip_epsilon = state["done"], state["clip_epsilon"]
        self.reward_scaler.load_state_dict(state["reward_scaler"])


def build(cfg: PPOConfig, *, spaces: tuple[gspaces.Space, gspaces.Space], network, env, collector, optim,
          device: torch.device, seed: int, run_folder=None, source=None, group=None) -> PPO:
    """PPO with an actor-critic sized from ``spaces`` = (observation space, action space).

    ``network``, ``env``, ``collector`` and ``optim`` are the run's sections.
    """
    agent = build_actor_critic(network, env, *spaces, group=group).to(device)
    reward_scaler = RewardScaler(env.num_envs, gamma=cfg.gamma, enabled=env.normalize_reward, group=group).to(device)
    return PPO(cfg, agent=agent, reward_scaler=reward_scaler, optim=optim, iterations=collector.iterations,
               device=device, seed=seed, group=group)
