"""Bare-torch floors of the off-policy actor-critic family: SAC's, TQC's and CrossQ's gradient steps
written as one would by hand (separate critic MLPs and their targets, a squashed Gaussian actor, fused
Adams, foreach Polyak updates), and :func:`ensemble_member`, one critic of a batched ensemble as a
plain MLP."""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.bench.floors.value_based import pairwise_quantile_loss
from rlcli.models.batch_renorm import BatchRenorm


class SquashedPolicy:
    """A squashed Gaussian over a plain copy of an actor's MLP, as a hand-written SAC keeps it: the floors'
    actor (SAC, TQC, CrossQ)."""

    def __init__(self, actor, generator: torch.Generator):
        self.net = copy.deepcopy(actor.net)
        self.center, self.half = actor.rescale.center, actor.rescale.half_range
        self.generator = generator

    def __call__(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.net(obs).chunk(2, -1)
        log_std = log_std.clamp(-20, 2)
        noise = torch.randn(mean.shape, generator=self.generator)
        u = mean + log_std.exp() * noise
        log_prob = (
            -0.5 * noise.square() - log_std - 0.5 * math.log(2 * math.pi) - 2 * (math.log(2) - u - F.softplus(-2 * u))
        ).sum(-1)
        return self.center + self.half * torch.tanh(u), log_prob


class BareSAC:
    """SAC's gradient step written plainly in torch, as one would by hand: two separate critic
    MLPs and their targets, an actor MLP, a log-temperature, fused Adams (one for the critics, one
    for the actor and temperature), foreach Polyak updates. The floor that the library's
    batched-ensemble update is priced against."""

    def __init__(self, algo, target_entropy: float, gamma: float, tau: float):
        agent = algo.agent
        self.policy = SquashedPolicy(agent.actor, torch.Generator().manual_seed(0))
        self.actor = self.policy.net
        self.critics = [ensemble_member(agent.critic.net, e) for e in range(agent.critic.members)]
        self.targets = [copy.deepcopy(c).requires_grad_(False) for c in self.critics]
        self.log_alpha = nn.Parameter(agent.log_alpha.detach().clone())
        # list[Tensor], not list[Parameter]: _foreach_lerp_ takes the former, and lists are invariant.
        self.critic_params: list[torch.Tensor] = [p for c in self.critics for p in c.parameters()]
        self.target_params: list[torch.Tensor] = [p for t in self.targets for p in t.parameters()]
        self.critic_opt = torch.optim.Adam(self.critic_params, lr=1e-3, fused=True)
        self.actor_opt = torch.optim.Adam([*self.actor.parameters(), self.log_alpha], lr=1e-3, fused=True)
        self.target_entropy, self.gamma, self.tau = target_entropy, gamma, tau

    def step(self, batch: TensorDict) -> None:
        """One gradient step of the critics, then of the actor and temperature, then the targets."""
        obs, action, next_obs = batch[keys.INPUT], batch[keys.ACTION], batch[keys.NEXT_INPUT]
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            next_action, next_log_prob = self.policy(next_obs)
            x = torch.cat([next_obs, next_action], -1)
            q_next = torch.min(self.targets[0](x), self.targets[1](x)).squeeze(-1)
            y = batch[keys.REWARD] + self.gamma * (~batch[keys.TERMINATED]) * (q_next - alpha * next_log_prob)
        x = torch.cat([obs, action], -1)
        loss = 0.5 * sum(((c(x).squeeze(-1) - y) ** 2).mean() for c in self.critics)
        self.critic_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.critic_opt.step()
        self.actor_and_targets(obs, alpha)

    def actor_and_targets(self, obs: torch.Tensor, alpha: torch.Tensor) -> None:
        """The actor and temperature step on ``obs``, then the targets' Polyak update."""
        new_action, log_prob = self.policy(obs)
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
        if isinstance(layer, BatchRenorm):
            # CrossQ's critics: a layer of the member's own, with fresh statistics.
            layers.append(
                BatchRenorm(layer.running_mean.shape[-1], momentum=layer.momentum, eps=layer.eps, warmup=layer.warmup)
            )
        elif hasattr(layer, "weight"):
            linear = nn.Linear(layer.weight.shape[1], layer.weight.shape[2])
            with torch.no_grad():
                linear.weight.copy_(layer.weight[e].T)
                linear.bias.copy_(layer.bias[e, 0])
            layers.append(linear)
        else:
            layers.append(type(layer)())
    return nn.Sequential(*layers)


def plain_critics(ensemble) -> tuple[list[nn.Sequential], list[nn.Sequential], list, list]:
    """Separate critic MLPs copied from an ensemble, their targets, and both parameter lists."""
    critics = [ensemble_member(ensemble.net, e) for e in range(ensemble.members)]
    targets = [copy.deepcopy(c).requires_grad_(False) for c in critics]
    return critics, targets, [p for c in critics for p in c.parameters()], [p for t in targets for p in t.parameters()]


def min_q(critics, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """The smallest of ``critics``' values at ``obs`` [B, O] and ``action`` [B, A]: [B] float32."""
    x = torch.cat([obs, action], -1)
    return torch.stack([c(x).squeeze(-1) for c in critics]).min(0).values


def _actor_step(policy: SquashedPolicy, log_alpha, optimizer, critics, obs, alpha, target_entropy, reduce) -> None:
    """The actor and temperature step of a hand-written SAC: ``reduce`` turns the critics' outputs at
    the policy's actions into the value it maximises."""
    action, log_prob = policy(obs)
    x = torch.cat([obs, action], -1)
    for critic in critics:
        critic.requires_grad_(False)
    q = reduce([critic(x) for critic in critics])
    for critic in critics:
        critic.requires_grad_(True)
    loss = (alpha * log_prob - q).mean() - (log_alpha * (log_prob.detach() + target_entropy)).mean()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


class BareTQC:
    """TQC's gradient step: separate quantile critics and their targets, the pooled target sorted and
    truncated, the pairwise loss averaged over everything, the actor and temperature step, Polyak
    updates (foreach)."""

    def __init__(self, algo, *, kept: int, gamma: float, tau: float):
        agent = algo.agent
        self.policy = SquashedPolicy(agent.actor, torch.Generator().manual_seed(0))
        self.critics = [ensemble_member(agent.critic.net, e) for e in range(agent.critic.members)]
        self.targets = [copy.deepcopy(c).requires_grad_(False) for c in self.critics]
        self.log_alpha = nn.Parameter(agent.log_alpha.detach().clone())
        self.critic_params: list[torch.Tensor] = [p for c in self.critics for p in c.parameters()]
        self.target_params: list[torch.Tensor] = [p for t in self.targets for p in t.parameters()]
        self.critic_opt = torch.optim.Adam(self.critic_params, lr=1e-3, fused=True)
        self.actor_opt = torch.optim.Adam([*self.policy.net.parameters(), self.log_alpha], lr=1e-3, fused=True)
        self.kept, self.gamma, self.tau, self.target_entropy = kept, gamma, tau, algo.target_entropy

    def step(self, batch: TensorDict) -> None:
        obs, next_obs = batch[keys.INPUT], batch[keys.NEXT_INPUT]
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            next_action, next_log_prob = self.policy(next_obs)
            x = torch.cat([next_obs, next_action], -1)
            pooled = torch.cat([t(x) for t in self.targets], -1).sort(-1).values[:, : self.kept]
            alive = (~batch[keys.TERMINATED]).float().unsqueeze(-1)
            target = batch[keys.REWARD].unsqueeze(-1) + self.gamma * alive * (
                pooled - alpha * next_log_prob.unsqueeze(-1)
            )
        x = torch.cat([obs, batch[keys.ACTION]], -1)
        current = torch.stack([c(x) for c in self.critics], 1)
        loss = pairwise_quantile_loss(current, target.unsqueeze(1)).mean()
        self.critic_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.critic_opt.step()
        _actor_step(
            self.policy,
            self.log_alpha,
            self.actor_opt,
            self.critics,
            obs,
            alpha,
            self.target_entropy,
            lambda qs: torch.stack(qs).mean((0, 2)),
        )
        with torch.no_grad():
            torch._foreach_lerp_(self.target_params, self.critic_params, self.tau)


def _learning(modules, on: bool) -> None:
    for module in modules:
        for layer in module.modules():
            if isinstance(layer, BatchRenorm):
                layer.learning = on


class BareCrossQ:
    """CrossQ's gradient step: separate batch-renormalized critics evaluated once on the joint batch
    [(s, a); (s', a')], no targets, then (every ``policy_delay`` steps, here every step: the costlier
    case) the actor and temperature step with the actor's layers learning."""

    def __init__(self, algo, *, gamma: float):
        agent = algo.agent
        self.policy = SquashedPolicy(agent.actor, torch.Generator().manual_seed(0))
        self.critics = [ensemble_member(agent.critic.net, e) for e in range(agent.critic.members)]
        self.log_alpha = nn.Parameter(agent.log_alpha.detach().clone())
        self.critic_opt = torch.optim.Adam([p for c in self.critics for p in c.parameters()], lr=1e-3, fused=True)
        self.actor_opt = torch.optim.Adam([*self.policy.net.parameters(), self.log_alpha], lr=1e-3, fused=True)
        self.gamma, self.target_entropy = gamma, algo.target_entropy

    def step(self, batch: TensorDict) -> None:
        obs, next_obs, size = batch[keys.INPUT], batch[keys.NEXT_INPUT], batch.batch_size[0]
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            next_action, next_log_prob = self.policy(next_obs)
        x = torch.cat([torch.cat([obs, batch[keys.ACTION]], -1), torch.cat([next_obs, next_action], -1)])
        _learning(self.critics, True)
        q = torch.cat([c(x) for c in self.critics], -1)
        _learning(self.critics, False)
        with torch.no_grad():
            alive = (~batch[keys.TERMINATED]).float()
            target = batch[keys.REWARD] + self.gamma * alive * (q[size:].min(-1).values - alpha * next_log_prob)
        loss = 0.5 * sum(((q[:size, e] - target) ** 2).mean() for e in range(q.shape[-1]))
        self.critic_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.critic_opt.step()
        _learning([self.policy.net], True)
        _actor_step(
            self.policy,
            self.log_alpha,
            self.actor_opt,
            self.critics,
            obs,
            alpha,
            self.target_entropy,
            lambda qs: torch.cat(qs, -1).min(-1).values,
        )
        _learning([self.policy.net], False)
