"""Twin Delayed DDPG (Fujimoto et al., 2018): a deterministic actor, clipped double-Q critics
on a batched ensemble, target policy smoothing, and delayed actor and target updates."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np
import torch
from gymnasium import spaces as gspaces
from torch import nn

from rlcli import keys
from rlcli.advantages import bootstrapped_target, critic_regression
from rlcli.config.algos import TD3Config
from rlcli.exploration import ActionNoise, uniform_actions
from rlcli.models.actors import DeterministicActor
from rlcli.models.ensemble import QEnsemble
from rlcli.models.mlp import mlp
from rlcli.normalization import ObservationNormalizer
from rlcli.optim import GradientStep
from rlcli.replay import Replay, build_replay, transition_spec
from rlcli.targets import TargetSchedule
from rlcli.timing import Timer

if TYPE_CHECKING:
    # Only a type here.
    from tensordict import TensorDict


CONFIG = TD3Config
SUPPORTS = {"observation": (gspaces.Box,), "action": (gspaces.Box,)}
PHASES = ("update.extend", "update.sample", "update.forward", "update.backward", "update.optimizer",
          "update.priority", "update.target")
METRICS = ("loss/critic", "loss/actor", "loss/total", "stats/q_mean", "stats/td_abs", "stats/gradient_steps",
           "stats/buffer_size", "optim/lr")


class DeterministicAgent(nn.Module):
    """Actor, critics and their targets over one observation normalizer."""

    def __init__(self, obs_norm: ObservationNormalizer, actor: DeterministicActor, critic: QEnsemble):
        super().__init__()
        self.obs_norm = obs_norm
        self.actor = actor
        self.critic = critic
        self.actor_target = copy.deepcopy(actor).requires_grad_(False)
        self.critic_target = copy.deepcopy(critic).requires_grad_(False)


def td3_critic_loss(agent: DeterministicAgent, batch: TensorDict, *, gamma: float, target_noise: float,
                    noise_clip: float, low: torch.Tensor, high: torch.Tensor,
                    generator: torch.Generator) -> dict[str, torch.Tensor]:
    """``0.5 * sum_e mean_b (Q_e(s, a) - y)^2`` with ``y = r + discount * (1 - terminated) *
    min_e Q'_e(s', clip(pi'(s') + clip(eps, -c, c)))``, eps ~ N(0, target_noise) in half-ranges.

    Reads ``input``, ``action``, ``reward``, ``next_input``, ``terminated`` and, when present,
    ``discount`` and ``weight``. Returns ``loss/critic``, ``stats/q_mean``, ``stats/td_abs`` and
    ``td_error`` ([B], detached, the mean over critics, for priorities).
    """
    with torch.no_grad():
        next_action = agent.actor_target(batch[keys.NEXT_INPUT])
        if target_noise > 0:
            noise = torch.randn(next_action.shape, generator=generator, device=next_action.device)
            noise = (noise * target_noise).clamp_(-noise_clip, noise_clip)
            next_action = torch.minimum(torch.maximum(next_action + noise * (high - low) / 2, low), high)
        q_next = agent.critic_target(batch[keys.NEXT_INPUT], next_action).min(0).values
        target = bootstrapped_target(batch, q_next, gamma=gamma)
    return critic_regression(agent.critic(batch[keys.INPUT], batch[keys.ACTION]), target, batch)


def td3_actor_loss(agent: DeterministicAgent, batch: TensorDict) -> dict[str, torch.Tensor]:
    """``-mean Q_0(s, pi(s))``: the first critic judges the actor. Reads ``input``; the
    critics' weights get no gradient."""
    action = agent.actor(batch[keys.INPUT])
    with agent.critic.frozen():
        q = agent.critic(batch[keys.INPUT], action)[0]
    return {"loss/actor": -q.mean()}


class TD3:
    """Uniform actions during warm-up, then the actor plus exploration noise; each batch extends
    the buffer, then ``utd_ratio`` critic steps per frame, and every ``policy_delay`` of them an
    actor step and Polyak updates of both targets. DDPG is this with one critic, no delay and
    no target smoothing."""

    def __init__(self, cfg, *, agent: DeterministicAgent, replay: Replay, noise: ActionNoise, optim,
                 iterations: int, action_space: gspaces.Box, device: torch.device, seed: int, group=None):
        self.cfg = cfg
        self.agent = agent
        self.replay = replay
        self.noise = noise
        self.critic_step = GradientStep(optim, agent.critic.parameters(), iterations, group)
        self.actor_step = GradientStep(optim, agent.actor.parameters(), iterations, group)
        # Both targets move together, right after each (delayed) actor step.
        self.critic_target = TargetSchedule(agent.critic_target, agent.critic, tau=cfg.tau, interval=1)
        self.actor_target = TargetSchedule(agent.actor_target, agent.actor, tau=cfg.tau, interval=1)
        self.low = torch.as_tensor(action_space.low, dtype=torch.float32, device=device)
        self.high = torch.as_tensor(action_space.high, dtype=torch.float32, device=device)
        self.device = device
        self.generator = torch.Generator(device=replay.buffer.storage_device)
        self.generator.manual_seed(seed)
        self.noise_generator = torch.Generator(device=device)
        self.noise_generator.manual_seed(seed + 1)
        self.updates = 0

    @torch.no_grad()
    def act(self, observation: torch.Tensor, generator: torch.Generator) -> TensorDict:
        """``action`` [N, A] in the Box bounds: uniform during the warm-up, then the actor's plus noise."""
        from tensordict import TensorDict

        n = observation.shape[0]
        if not self.replay.learning:
            action = uniform_actions(self.low, self.high, n, generator)
        else:
            action = self.noise(self.agent.actor(self.agent.obs_norm(observation)), generator)
            # Stored as executed: the critic learns the value of the clipped action.
            action = torch.minimum(torch.maximum(action, self.low), self.high)
        return TensorDict({keys.ACTION: action}, batch_size=[n])

    @torch.no_grad()
    def policy(self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator) -> torch.Tensor:
        """Evaluation actions [N, A] in the Box bounds for raw ``observation`` [N, obs]: the actor's, plus
        Gaussian noise of ``noise_scale`` when stochastic.

        Gaussian even for OU-noise configs: the OU state belongs to the collection envs, and
        evaluation must neither read nor advance it.
        """
        action = self.agent.actor(self.agent.obs_norm(observation))
        if deterministic:
            return action
        draw = torch.randn(action.shape, generator=generator, device=action.device, dtype=action.dtype)
        action = action + self.cfg.noise_scale * draw * (self.high - self.low) / 2
        return torch.minimum(torch.maximum(action, self.low), self.high)

    def _critic_terms(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        cfg = self.cfg
        return td3_critic_loss(self.agent, batch, gamma=cfg.gamma, target_noise=cfg.target_noise,
                               noise_clip=cfg.target_noise_clip, low=self.low, high=self.high,
                               generator=self.noise_generator)

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """Critic and actor losses of one minibatch; ``loss/total`` is their sum."""
        terms = self._critic_terms(batch) | td3_actor_loss(self.agent, batch)
        terms["loss/total"] = terms["loss/critic"] + terms["loss/actor"]
        return terms

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Store the batch, then the gradient steps it pays for; returns means over those steps."""
        cfg = self.cfg
        stats = {"optim/lr": self.critic_step.lr}
        stats |= self.replay.learn(batch, cfg.batch_size, self.generator, self.update, timer)
        self.critic_step.end_iteration()
        self.actor_step.end_iteration()
        if "loss/critic" in stats:
            stats["loss/total"] = stats["loss/critic"] + stats.get("loss/actor", 0.0)
        return stats

    def update(self, sample: TensorDict, timer: Timer) -> dict[str, torch.Tensor]:
        """One critic step on a normalized replay ``sample``, and the actor step and target updates
        when due; returns the detached loss terms."""
        cfg = self.cfg
        with timer.phase("update.forward"):
            terms = self._critic_terms(sample)
        td_error = terms.pop("td_error")
        self.critic_step(terms["loss/critic"], timer)
        if cfg.replay.prioritized:
            with timer.phase("update.priority"):
                self.replay.buffer.update_priorities(sample[keys.INDEX], td_error)
        self.updates += 1
        if self.updates % cfg.policy_delay == 0:
            with timer.phase("update.forward"):
                terms |= td3_actor_loss(self.agent, sample)
            self.actor_step(terms["loss/actor"], timer)
            with timer.phase("update.target"):
                self.critic_target.step()
                self.actor_target.step()
        return {name: value.detach() for name, value in terms.items()}

    def minibatch(self, batch: TensorDict, size: int, generator: torch.Generator) -> TensorDict:
        """Store ``batch`` and sample ``size`` transitions from the buffer, normalized."""
        self.replay.observe(batch)
        return self.replay.sample(size, generator)

    def state_dict(self, *, replay: bool = True) -> dict:
        return {
            "critic_step": self.critic_step.state_dict(), "actor_step": self.actor_step.state_dict(),
            "generator": self.generator.get_state(), "noise_generator": self.noise_generator.get_state(),
            "updates": self.updates, "replay": self.replay.state_dict(storage=replay), "noise": self.noise.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.critic_step.load_state_dict(state["critic_step"])
        self.actor_step.load_state_dict(state["actor_step"])
        self.generator.set_state(state["generator"])
        self.noise_generator.set_state(state["noise_generator"])
        self.updates = state["updates"]
        self.replay.load_state_dict(state["replay"])
        self.noise.load_state_dict(state["noise"])


def build_deterministic(cfg, *, spaces: tuple[gspaces.Space, gspaces.Space], network, env, collector, optim,
                        device: torch.device, seed: int, run_folder=None, source: str | None = None,
                        group=None) -> TD3:
    """TD3 (or DDPG, for a config that says so) sized from ``spaces`` = (observation, Box action).

    Reads ``num_critics``, ``policy_delay``, ``target_noise``, ``target_noise_clip``, ``noise``,
    ``noise_scale`` and ``ou_theta`` from ``cfg``, besides the replay settings. The actor takes
    ``network.policy_hidden_sizes``, each critic ``network.value_hidden_sizes``.

    Raises:
        ConfigError: the buffer would not fit in free memory (or disk), or its folder is not writable.
    """
    observation_space, action_space = spaces
    act_dim = int(np.prod(action_space.shape))
    obs_dim = int(np.prod(observation_space.shape))
    spec = transition_spec(observation_space.shape, (tuple(action_space.shape), torch.float32), n_step=cfg.n_step)
    actor = DeterministicActor(
        mlp(obs_dim, network.policy_sizes, act_dim, activation=network.activation,
            orthogonal=network.init == "orthogonal", out_gain=0.01),
        action_space)
    critic = QEnsemble(cfg.num_critics, obs_dim, act_dim, network.value_sizes, activation=network.activation)
    obs_norm = ObservationNormalizer(observation_space.shape, enabled=env.normalize_observation,
                                     clip=env.clip_observation, group=group)
    agent = DeterministicAgent(obs_norm, actor, critic).to(device)
    noise = ActionNoise(cfg.noise, scale=cfg.noise_scale, num_envs=env.num_envs, theta=cfg.ou_theta,
                        half_range=torch.as_tensor((action_space.high - action_space.low) / 2,
                                                   dtype=torch.float32)).to(device)
    replay = build_replay(cfg, spec, agent.obs_norm, num_envs=env.num_envs, normalize_reward=env.normalize_reward,
                          device=device, run_folder=run_folder, source=source, group=group)
    return TD3(cfg, agent=agent, replay=replay, noise=noise, optim=optim, iterations=collector.iterations,
               action_space=action_space, device=device, seed=seed, group=group)


build = build_deterministic
