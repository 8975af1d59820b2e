"""Bare-torch floors of the gradient steps of QR-DQN, TQC, CrossQ and TRPO: the same maths written
plainly, as one would by hand (and as sb3-contrib writes it): separate critic MLPs, the quantile Huber
loss pair by pair, fused Adams, flat gradients and a conjugate-gradient loop. The ``contrib`` suite
prices each library step against its floor."""

from __future__ import annotations

import copy

import torch
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.bench.floors import SquashedPolicy, ensemble_member
from rlcli.models.batch_renorm import BatchRenorm


def pairwise_quantile_loss(current: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The quantile Huber loss of every pair, as sb3-contrib's ``quantile_huber_loss`` writes it:
    ``current`` [..., N], ``target`` [..., M] -> [..., N, M]."""
    n = current.shape[-1]
    tau = ((torch.arange(n, dtype=torch.float32) + 0.5) / n).unsqueeze(-1)
    delta = target.unsqueeze(-2) - current.unsqueeze(-1)
    size = delta.abs()
    huber = torch.where(size > 1, size - 0.5, 0.5 * delta**2)
    return (tau - (delta.detach() < 0).float()).abs() * huber


class BareQRDQN:
    """QR-DQN's gradient step: the online and target quantile networks as plain Sequentials, the
    target's greedy action, the pairwise loss summed over the estimates, one fused Adam step."""

    def __init__(self, algo, gamma: float):
        q = algo.agent.q
        self.net, self.actions, self.count = copy.deepcopy(q.net), q.actions, q.count
        self.target = copy.deepcopy(self.net).requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=1e-3, fused=True)
        self.gamma = gamma

    def step(self, batch: TensorDict) -> None:
        size = batch.batch_size[0]
        with torch.no_grad():
            next_q = self.target(batch[keys.NEXT_INPUT]).view(size, self.actions, self.count)
            best = next_q.mean(-1).argmax(-1)
            next_q = next_q[torch.arange(size), best]
            alive = (~batch[keys.TERMINATED]).float().unsqueeze(-1)
            target = batch[keys.REWARD].unsqueeze(-1) + self.gamma * alive * next_q
        current = self.net(batch[keys.INPUT]).view(size, self.actions, self.count)[
            torch.arange(size), batch[keys.ACTION]
        ]
        loss = pairwise_quantile_loss(current, target).sum(-2).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()


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
        self.critic_params = [p for c in self.critics for p in c.parameters()]
        self.target_params = [p for t in self.targets for p in t.parameters()]
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


class BareTRPO:
    """TRPO's update of one rollout: the policy's surrogate and KL, flat gradients, Fisher-vector products
    by double backward in a plain conjugate-gradient loop, the line search, then the value's minibatch
    steps with a fused Adam, all on plain copies of the agent's networks."""

    def __init__(self, algo):
        agent, cfg = algo.agent, algo.cfg
        self.encoder, self.head = copy.deepcopy(agent.encoder), copy.deepcopy(agent.policy)
        self.params = [*self.encoder.parameters(), *self.head.parameters()]
        self.value = copy.deepcopy(agent.value)
        self.optimizer = torch.optim.Adam(self.value.parameters(), lr=1e-3, fused=True)
        self.cfg = cfg

    def step(self, rows: TensorDict) -> None:
        cfg, params = self.cfg, self.params
        obs, action, old_log_prob = rows[keys.INPUT], rows[keys.ACTION], rows[keys.LOG_PROB]
        advantage = rows[keys.ADVANTAGE]
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
        with torch.no_grad():
            old = self.head(self.encoder(obs))

        def objective():
            dist = self.head(self.encoder(obs))
            ratio = (self.head.log_prob(dist, action) - old_log_prob).exp()
            return (ratio * advantage).mean(), self.head.kl(old, dist).mean()

        surrogate, kl = objective()
        g = torch.cat([x.reshape(-1) for x in torch.autograd.grad(surrogate, params, retain_graph=True)])
        grad_kl = torch.cat([x.reshape(-1) for x in torch.autograd.grad(kl, params, create_graph=True)])

        def fisher(v):
            product = torch.autograd.grad(grad_kl @ v, params, retain_graph=True)
            return torch.cat([x.reshape(-1) for x in product]) + cfg.cg_damping * v

        x, r, p = torch.zeros_like(g), g.clone(), g.clone()
        rr = r @ r
        for _ in range(cfg.cg_iterations):
            fp = fisher(p)
            a = rr / (p @ fp)
            x, r = x + a * p, r - a * fp
            rr, old_rr = r @ r, rr
            p = r + rr / old_rr * p
        full = x * torch.sqrt(2 * cfg.max_kl / (x @ fisher(x)))
        start = torch.cat([q.detach().reshape(-1) for q in params])
        base = float(surrogate.detach())
        fraction = 1.0
        for _ in range(cfg.backtracks):
            torch.nn.utils.vector_to_parameters(start + fraction * full, params)
            with torch.no_grad():
                new, new_kl = objective()
            if float(new_kl) < cfg.max_kl and float(new) > base:
                break
            fraction *= cfg.backtrack_ratio
        size = rows.batch_size[0]
        for _ in range(cfg.value_epochs):
            order = torch.randperm(size)
            for begin in range(0, size, cfg.value_minibatch_size):
                index = order[begin : begin + cfg.value_minibatch_size]
                value = self.value(self.encoder(obs[index]).detach())
                loss = ((value - rows[keys.VALUE_TARGET][index]) ** 2).mean()
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
