"""Bare-torch floors: the same maths as the library's, written plainly in torch as one would
by hand, so that the bench suites can price what the library adds (``*.slowdown_vs_bare_torch``,
``gae_speedup``)."""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from tensordict import TensorDict
from torch import nn

from rlcli import keys


def gae_loop(reward, value, next_value, terminated, truncated, *, gamma, lam):
    """The usual GAE: a reversed Python loop over time, vectorized over envs (the baseline)."""
    advantage = torch.zeros_like(reward)
    running = torch.zeros_like(reward[0])
    not_terminated = (~terminated).float()
    not_done = (~(terminated | truncated)).float()
    for t in reversed(range(reward.shape[0])):
        delta = reward[t] + gamma * next_value[t] * not_terminated[t] - value[t]
        running = delta + gamma * lam * not_done[t] * running
        advantage[t] = running
    return advantage, advantage + value


def _bare_features(agent, obs: torch.Tensor) -> torch.Tensor:
    """The shared encoder's features as one writes them by hand: a vector as it is, frames as
    ``relu(linear(convolutions(frames / 255)))`` (channels first, as ale-py gives them)."""
    encoder = agent.encoder
    if not hasattr(encoder, "body"):
        return obs
    return F.relu(encoder.head(encoder.body(obs.float() / 255.0)))


def bare_ppo_loss(agent, batch: TensorDict, clip_epsilon: float, value_coef: float, entropy_coef: float):
    """PPO's maths in bare torch (categorical policy), to price the library's overhead.

    Returns (loss, approx_kl, clip_fraction), the same figures ``ppo_loss`` computes.
    """
    obs, action = batch[keys.INPUT], batch[keys.ACTION]
    old_log_prob, advantage, target = batch[keys.LOG_PROB], batch[keys.ADVANTAGE], batch[keys.VALUE_TARGET]
    features = _bare_features(agent, obs)
    log_probs = F.log_softmax(agent.policy.net(features), -1)
    log_prob = log_probs.gather(-1, action.unsqueeze(-1)).squeeze(-1)
    entropy = -(log_probs.exp() * log_probs).sum(-1)
    advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    log_ratio = log_prob - old_log_prob
    ratio = log_ratio.exp()
    policy = -torch.min(ratio * advantage, ratio.clamp(1 - clip_epsilon, 1 + clip_epsilon) * advantage).mean()
    value = agent.value.net(features).squeeze(-1)
    value_loss = (value - target).square().mean()
    with torch.no_grad():
        approx_kl = ((ratio - 1) - log_ratio).mean()
        clip_fraction = ((ratio - 1).abs() > clip_epsilon).float().mean()
    return policy + value_coef * value_loss - entropy_coef * entropy.mean(), approx_kl, clip_fraction


class BareSAC:
    """SAC's gradient step written plainly in torch, as one would by hand: two separate critic
    MLPs and their targets, an actor MLP, a log-temperature, fused Adams (one for the critics, one
    for the actor and temperature), foreach Polyak updates. The floor that the library's
    batched-ensemble update is priced against."""

    def __init__(self, algo, target_entropy: float, gamma: float, tau: float):
        agent = algo.agent
        self.actor = copy.deepcopy(agent.actor.net)
        self.center, self.half = agent.actor.rescale.center, agent.actor.rescale.half_range
        self.critics = [ensemble_member(agent.critic.net, e) for e in range(agent.critic.members)]
        self.targets = [copy.deepcopy(c).requires_grad_(False) for c in self.critics]
        self.log_alpha = nn.Parameter(agent.log_alpha.detach().clone())
        critic_params = [p for c in self.critics for p in c.parameters()]
        self.critic_params, self.target_params = critic_params, [p for t in self.targets for p in t.parameters()]
        self.critic_opt = torch.optim.Adam(critic_params, lr=1e-3, fused=True)
        self.actor_opt = torch.optim.Adam([*self.actor.parameters(), self.log_alpha], lr=1e-3, fused=True)
        self.target_entropy, self.gamma, self.tau = target_entropy, gamma, tau
        self.generator = torch.Generator().manual_seed(0)

    def _policy(self, obs):
        mean, log_std = self.actor(obs).chunk(2, -1)
        log_std = log_std.clamp(-20, 2)
        noise = torch.randn(mean.shape, generator=self.generator)
        u = mean + log_std.exp() * noise
        log_prob = (-0.5 * noise.square() - log_std - 0.5 * math.log(2 * math.pi)
                    - 2 * (math.log(2) - u - F.softplus(-2 * u))).sum(-1)
        return self.center + self.half * torch.tanh(u), log_prob

    def step(self, batch: TensorDict) -> None:
        """One gradient step of the critics, then of the actor and temperature, then the targets."""
        obs, action, next_obs = batch[keys.INPUT], batch[keys.ACTION], batch[keys.NEXT_INPUT]
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            next_action, next_log_prob = self._policy(next_obs)
            x = torch.cat([next_obs, next_action], -1)
            q_next = torch.min(self.targets[0](x), self.targets[1](x)).squeeze(-1)
            y = batch[keys.REWARD] + self.gamma * (~batch[keys.TERMINATED]) * (q_next - alpha * next_log_prob)
        x = torch.cat([obs, action], -1)
        loss = 0.5 * sum(((c(x).squeeze(-1) - y) ** 2).mean() for c in self.critics)
        self.critic_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.critic_opt.step()
        new_action, log_prob = self._policy(obs)
        x = torch.cat([obs, new_action], -1)
        for c in self.critics:
            c.requires_grad_(False)
        q = torch.min(self.critics[0](x), self.critics[1](x)).squeeze(-1)
        for c in self.critics:
            c.requires_grad_(True)
        actor_loss = (alpha * log_prob - q).mean()
        alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
        self.actor_opt.zero_grad(set_to_none=True)
        (actor_loss + alpha_loss).backward()
        self.actor_opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(self.target_params, self.critic_params, self.tau)


def ensemble_member(ensemble, e: int) -> nn.Sequential:
    """Member ``e`` of an :class:`EnsembleMLP` (weights [E, in, out]) as a plain ``nn.Sequential`` of
    ``nn.Linear`` layers with a copy of its weights (the tests check the ensemble against it)."""
    layers: list = []
    for layer in ensemble.layers:
        if hasattr(layer, "weight"):
            linear = nn.Linear(layer.weight.shape[1], layer.weight.shape[2])
            with torch.no_grad():
                linear.weight.copy_(layer.weight[e].T)
                linear.bias.copy_(layer.bias[e, 0])
            layers.append(linear)
        else:
            layers.append(type(layer)())
    return nn.Sequential(*layers)
