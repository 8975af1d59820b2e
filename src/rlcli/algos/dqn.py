"""Deep Q-Networks (Mnih et al., 2015) with double Q-learning (van Hasselt et al., 2016),
n-step returns and optional prioritized replay, on the shared replay buffer."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces as gspaces
from torch import nn

from rlcli import keys
from rlcli.advantages import bootstrapped_target
from rlcli.config.algos import DQNConfig
from rlcli.models.mlp import mlp
from rlcli.normalization import ObservationNormalizer
from rlcli.optim import GradientStep
from rlcli.replay import Replay, build_replay, transition_spec
from rlcli.targets import TargetSchedule
from rlcli.timing import Timer

if TYPE_CHECKING:
    # Only a type here.
    from tensordict import TensorDict


CONFIG = DQNConfig
SUPPORTS = {"observation": (gspaces.Box,), "action": (gspaces.Discrete,)}
PHASES = ("update.extend", "update.sample", "update.forward", "update.backward", "update.optimizer",
          "update.priority", "update.target")
METRICS = ("loss/q", "loss/total", "stats/q_mean", "stats/td_abs", "stats/gradient_steps", "stats/epsilon",
           "stats/buffer_size", "optim/lr")


class QAgent(nn.Module):
    """Online and target Q-networks over one observation normalizer."""

    def __init__(self, obs_norm: ObservationNormalizer, q: nn.Module):
        super().__init__()
        self.obs_norm = obs_norm
        self.q = q
        self.target = copy.deepcopy(q).requires_grad_(False)


def dqn_loss(agent: QAgent, batch: TensorDict, *, gamma: float, double: bool, huber: bool
             ) -> dict[str, torch.Tensor]:
    """TD loss of one replay minibatch.

    ``target = reward + discount * (1 - terminated) * Q_target(s', a')`` where
    ``a'`` is the online network's argmax (double) or the target's own (plain),
    and ``discount`` is the ``discount`` key (n-step) or ``gamma``. Truncated
    transitions bootstrap like any other: only termination drops it.

    Reads ``input``, ``action``, ``reward``, ``next_input``, ``terminated`` and,
    when present, ``discount`` and ``weight`` (importance weights), each [B].
    Returns ``loss/q``, ``stats/q_mean``, ``stats/td_abs`` and ``td_error``
    ([B], detached, for priorities).
    """
    q = agent.q(batch[keys.INPUT]).gather(1, batch[keys.ACTION].unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        next_input = batch[keys.NEXT_INPUT]
        next_target = agent.target(next_input)
        if double:
            choice = agent.q(next_input).argmax(1, keepdim=True)
            next_q = next_target.gather(1, choice).squeeze(1)
        else:
            next_q = next_target.max(1).values
        target = bootstrapped_target(batch, next_q, gamma=gamma)
    td = q - target
    elementwise = F.smooth_l1_loss(q, target, reduction="none") if huber else td.square()
    weight = batch.get(keys.WEIGHT, None)
    loss = elementwise.mean() if weight is None else (weight * elementwise).mean()
    return {"loss/q": loss, "stats/q_mean": q.detach().mean(), "stats/td_abs": td.detach().abs().mean(),
            "td_error": td.detach()}


class DQN:
    """Epsilon-greedy collection; each batch extends the buffer, then ``utd_ratio`` gradient
    steps per frame once ``learning_starts`` frames are in, and target updates on schedule."""

    def __init__(self, cfg: DQNConfig, *, agent: QAgent, replay: Replay, optim, iterations: int,
                 total_frames: int, num_actions: int, device: torch.device, seed: int, group=None):
        self.cfg = cfg
        self.agent = agent
        self.replay = replay
        self.step = GradientStep(optim, agent.q.parameters(), iterations, group)
        self.target = TargetSchedule(agent.target, agent.q, tau=cfg.tau, interval=cfg.target_update_interval)
        self.num_actions = num_actions
        self.device = device
        self.decay_frames = cfg.exploration_fraction * total_frames
        # Replay samples are drawn where the storage lives.
        self.generator = torch.Generator(device=replay.buffer.storage_device)
        self.generator.manual_seed(seed)
        self.updates = 0
        self.epsilon = self._epsilon()

    def _epsilon(self) -> float:
        """Uniform actions during warm-up, then a linear decay over the first ``exploration_fraction``."""
        cfg = self.cfg
        if not self.replay.learning:
            return 1.0
        done = min(self.replay.frames / self.decay_frames, 1.0) if self.decay_frames > 0 else 1.0
        return cfg.epsilon_start + done * (cfg.epsilon_end - cfg.epsilon_start)

    @torch.no_grad()
    def act(self, observation: torch.Tensor, generator: torch.Generator) -> TensorDict:
        """Epsilon-greedy ``action`` ([N] int64) for raw ``observation`` ([N, *obs])."""
        from tensordict import TensorDict

        n = observation.shape[0]
        uniform = torch.randint(self.num_actions, (n,), generator=generator, device=observation.device)
        if self.epsilon >= 1.0:
            action = uniform
        else:
            greedy = self.agent.q(self.agent.obs_norm(observation)).argmax(1)
            explore = torch.rand(n, generator=generator, device=observation.device) < self.epsilon
            action = torch.where(explore, uniform, greedy)
        return TensorDict({keys.ACTION: action}, batch_size=[n])

    @torch.no_grad()
    def policy(self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator) -> torch.Tensor:
        """Evaluation actions ([N] int64) for raw ``observation`` ([N, *obs]): greedy, or epsilon-greedy
        at ``epsilon_end`` (the rate training settles at), whatever the current schedule says."""
        greedy = self.agent.q(self.agent.obs_norm(observation)).argmax(1)
        if deterministic:
            return greedy
        n = observation.shape[0]
        uniform = torch.randint(self.num_actions, (n,), generator=generator, device=observation.device)
        explore = torch.rand(n, generator=generator, device=observation.device) < self.cfg.epsilon_end
        return torch.where(explore, uniform, greedy)

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """:func:`dqn_loss` terms plus ``loss/total``, the scalar to minimise."""
        cfg = self.cfg
        terms = dqn_loss(self.agent, batch, gamma=cfg.gamma, double=cfg.double, huber=cfg.loss == "huber")
        terms["loss/total"] = terms["loss/q"]
        return terms

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Store the batch, then the gradient steps it pays for; returns means over those steps."""
        cfg = self.cfg
        stats = {"optim/lr": self.step.lr, "stats/epsilon": self.epsilon}
        stats |= self.replay.learn(batch, cfg.batch_size, self.generator, self.update, timer)
        self.step.end_iteration()
        self.epsilon = self._epsilon()
        return stats

    def update(self, sample: TensorDict, timer: Timer) -> dict[str, torch.Tensor]:
        """One gradient step on a normalized replay ``sample``, the priority update and the target
        update when due; returns the detached loss terms."""
        with timer.phase("update.forward"):
            terms = self.loss(sample)
        td_error = terms.pop("td_error")
        self.step(terms["loss/total"], timer)
        if self.cfg.replay.prioritized:
            with timer.phase("update.priority"):
                self.replay.buffer.update_priorities(sample[keys.INDEX], td_error)
        with timer.phase("update.target"):
            self.target.step()
        self.updates += 1
        return {name: value.detach() for name, value in terms.items()}

    def minibatch(self, batch: TensorDict, size: int, generator: torch.Generator) -> TensorDict:
        """Store ``batch`` and sample ``size`` transitions from the buffer, normalized."""
        self.replay.observe(batch)
        return self.replay.sample(size, generator)

    def state_dict(self, *, replay: bool = True) -> dict:
        return {"step": self.step.state_dict(), "target": self.target.state_dict(),
                "generator": self.generator.get_state(), "updates": self.updates, "epsilon": self.epsilon,
                "replay": self.replay.state_dict(storage=replay)}

    def load_state_dict(self, state: dict) -> None:
        self.step.load_state_dict(state["step"])
        self.target.load_state_dict(state["target"])
        self.generator.set_state(state["generator"])
        self.updates, self.epsilon = state["updates"], state["epsilon"]
        self.replay.load_state_dict(state["replay"])


def build(cfg: DQNConfig, *, spaces: tuple[gspaces.Space, gspaces.Space], network, env, collector, optim,
          device: torch.device, seed: int, run_folder=None, source: str | None = None,
          group=None) -> DQN:
    """DQN with a Q-network sized from ``spaces`` = (observation space, Discrete action space).

    ``network``, ``env``, ``collector`` and ``optim`` are the run's sections; the Q-network
    uses ``network.value_sizes``. ``run_folder`` gives the run folder for memmap storage.

    Raises:
        ConfigError: the buffer would not fit in free memory (or disk), or its folder is not writable.
    """
    observation_space, action_space = spaces
    spec = transition_spec(observation_space.shape, ((), torch.int64), n_step=cfg.n_step)
    obs_dim = int(np.prod(observation_space.shape))
    num_actions = int(action_space.n)
    q = mlp(obs_dim, network.value_sizes, num_actions, activation=network.activation,
            orthogonal=network.init == "orthogonal", out_gain=1.0)
    obs_norm = ObservationNormalizer(observation_space.shape, enabled=env.normalize_observation,
                                     clip=env.clip_observation, group=group)
    agent = QAgent(obs_norm, q).to(device)
    replay = build_replay(cfg, spec, agent.obs_norm, num_envs=env.num_envs, normalize_reward=env.normalize_reward,
                          device=device, run_folder=run_folder, source=source, group=group)
    return DQN(cfg, agent=agent, replay=replay, optim=optim, iterations=collector.iterations,
               total_frames=collector.frames, num_actions=num_actions, device=device, seed=seed, group=group)
