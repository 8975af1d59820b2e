"""Bare-torch floors of the offline family: IQL's and CQL's gradient steps written plainly, on
separate critic MLPs copied from the library's ensembles."""

from __future__ import annotations

import copy
import math

import torch
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.bench.floors.actor_critic import BareSAC, min_q, plain_critics


class BareIQL:
    """IQL's gradient step written plainly in torch: a value MLP, separate critic MLPs and their
    targets, a Gaussian actor (tanh-bounded mean, a log-std vector), three fused Adams, a foreach
    Polyak update. The floor the library's IQL update is priced against."""

    def __init__(self, algo, *, gamma: float, tau: float, expectile: float, beta: float, max_weight: float):
        agent = algo.agent
        self.actor = copy.deepcopy(agent.actor.net)
        self.log_std = nn.Parameter(agent.actor.log_std.detach().clone())
        self.center, self.half = agent.actor.rescale.center, agent.actor.rescale.half_range
        self.value = copy.deepcopy(agent.value.net[1])
        self.critics, self.targets, self.critic_params, self.target_params = plain_critics(agent.critic)
        self.value_opt = torch.optim.Adam(self.value.parameters(), lr=3e-4, fused=True)
        self.critic_opt = torch.optim.Adam(self.critic_params, lr=3e-4, fused=True)
        self.actor_opt = torch.optim.Adam([*self.actor.parameters(), self.log_std], lr=3e-4, fused=True)
        self.gamma, self.tau, self.expectile, self.beta, self.max_weight = gamma, tau, expectile, beta, max_weight

    def step(self, batch: TensorDict) -> None:
        """The value step, the critic step, the actor step, then the targets."""
        obs, action, next_obs = batch[keys.INPUT], batch[keys.ACTION], batch[keys.NEXT_INPUT]
        with torch.no_grad():
            q = min_q(self.targets, obs, action)
        v = self.value(obs).squeeze(-1)
        u = q - v
        value_loss = (torch.abs(self.expectile - (u < 0).float()) * u.square()).mean()
        self.value_opt.zero_grad(set_to_none=True)
        value_loss.backward()
        self.value_opt.step()
        with torch.no_grad():
            y = batch[keys.REWARD] + self.gamma * (~batch[keys.TERMINATED]) * self.value(next_obs).squeeze(-1)
        x = torch.cat([obs, action], -1)
        critic_loss = 0.5 * sum(((c(x).squeeze(-1) - y) ** 2).mean() for c in self.critics)
        self.critic_opt.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_opt.step()
        weight = torch.exp(self.beta * u.detach()).clamp(max=self.max_weight)
        mean = self.center + self.half * torch.tanh(self.actor(obs))
        log_std = self.log_std.clamp(-20, 2)
        log_prob = (-0.5 * ((action - mean) / log_std.exp()).square() - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        actor_loss = -(weight * log_prob).mean()
        self.actor_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(self.target_params, self.critic_params, self.tau)


class BareCQL:
    """CQL(H)'s gradient step written plainly in torch: :class:`BareSAC`'s critics, actor and
    temperature (held, not inherited), and the conservative term over ``samples`` uniform, current-policy and next-policy
    actions per state, with a Python loop over the separate critics."""

    def __init__(self, algo, *, gamma: float, tau: float, weight: float, samples: int):
        self.sac = BareSAC(algo, algo.target_entropy, gamma, tau)
        self.weight, self.samples = weight, samples

    def step(self, batch: TensorDict) -> None:
        sac = self.sac
        obs, action, next_obs = batch[keys.INPUT], batch[keys.ACTION], batch[keys.NEXT_INPUT]
        size, n = obs.shape[0], self.samples
        act_dim = action.shape[-1]
        alpha = sac.log_alpha.detach().exp()
        with torch.no_grad():
            next_action, _ = sac.policy(next_obs)
            x = torch.cat([next_obs, next_action], -1)
            q_next = torch.min(sac.targets[0](x), sac.targets[1](x)).squeeze(-1)
            y = batch[keys.REWARD] + sac.gamma * (~batch[keys.TERMINATED]) * q_next
            states = obs.repeat_interleave(n, 0)
            both = torch.cat([obs, next_obs]).repeat_interleave(n, 0)
            pi_action, pi_log_prob = sac.policy(both)
            uniform = (
                torch.rand(size * n, act_dim, generator=sac.policy.generator) * 2 - 1
            ) * sac.policy.half + sac.policy.center
            density = torch.cat([torch.full((size * n,), -act_dim * math.log(2.0)), pi_log_prob])
            sampled = torch.cat([uniform, pi_action])
        x = torch.cat([obs, action], -1)
        loss: torch.Tensor | float = 0.0
        for critic in sac.critics:
            q_data = critic(x).squeeze(-1)
            q_sampled = critic(torch.cat([torch.cat([states, states, states]), sampled], -1)).squeeze(-1)
            scores = (q_sampled - density).view(3, size, n).permute(1, 0, 2).reshape(size, 3 * n)
            gap = torch.logsumexp(scores, -1).mean() - q_data.mean()
            loss = loss + ((q_data - y) ** 2).mean() + self.weight * gap
        # The floor's SAC has critics: the sum holds at least one critic's tensor.
        assert isinstance(loss, torch.Tensor)
        sac.critic_opt.zero_grad(set_to_none=True)
        loss.backward()
        sac.critic_opt.step()
        sac.actor_and_targets(obs, alpha)
