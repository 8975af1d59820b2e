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
from rlcli.models.batch_renorm import BatchRenorm


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
    # Frames of sequences ([L, C, *frame], a recurrent minibatch) go through the CNN as one batch.
    lead = obs.shape[: obs.dim() - 3]
    frames = obs.reshape(-1, *obs.shape[-3:])
    return F.relu(encoder.head(encoder.body(frames.float() / 255.0))).reshape(*lead, -1)


def _bare_lstm(agent, features: torch.Tensor, first: torch.Tensor, state: torch.Tensor):
    """(policy features, value features) of LSTM cores over sequences, written plainly: each env's runs
    between episode starts as columns of one call of torch's LSTM, padded at their ends (the first run of
    each env from its stored state, the others from zeros), then the outputs gathered back in order.
    The same computation as the library's, without its state layout or modules.

    Args:
        features: [L, C, F]; first: [L, C] bool; state: [C, cores, 2 * layers, size], as stored.
    """
    steps, envs = first.shape
    starts = first.t().clone()
    starts[:, 0] = True
    env_of, time_of = starts.nonzero(as_tuple=True)
    piece = starts.reshape(-1).cumsum(0) - 1
    offset = torch.arange(steps).repeat(envs) - time_of[piece]
    padded = features.new_zeros(steps, env_of.numel(), features.shape[-1])
    padded[offset, piece] = features.transpose(0, 1).reshape(-1, features.shape[-1])
    carried = ((time_of == 0) & ~first[0, env_of]).float().view(1, -1, 1)
    outputs = []
    for i, rnn in enumerate(agent.memory.cores):
        layers = rnn.num_layers
        h = state[env_of, i, :layers].transpose(0, 1) * carried
        c = state[env_of, i, layers:].transpose(0, 1) * carried
        out, _ = rnn(padded, (h.contiguous(), c.contiguous()))
        outputs.append(out[offset, piece].view(envs, steps, -1).transpose(0, 1))
    return outputs[0], outputs[-1]


def bare_ppo_loss(agent, batch: TensorDict, clip_epsilon: float, value_coef: float, entropy_coef: float):
    """PPO's maths in bare torch (categorical policy; with memory, LSTM cores over [L, C] sequences), to
    price the library's overhead.

    Returns (loss, approx_kl, clip_fraction), the same figures ``ppo_loss`` computes.
    """
    obs, action = batch[keys.INPUT], batch[keys.ACTION]
    old_log_prob, advantage, target = batch[keys.LOG_PROB], batch[keys.ADVANTAGE], batch[keys.VALUE_TARGET]
    features = value_features = _bare_features(agent, obs)
    if agent.memory is not None:
        features, value_features = _bare_lstm(agent, features, batch[keys.FIRST], batch[keys.MEMORY][0])
    log_probs = F.log_softmax(agent.policy.net(features), -1)
    log_prob = log_probs.gather(-1, action.unsqueeze(-1)).squeeze(-1)
    entropy = -(log_probs.exp() * log_probs).sum(-1)
    advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    log_ratio = log_prob - old_log_prob
    ratio = log_ratio.exp()
    policy = -torch.min(ratio * advantage, ratio.clamp(1 - clip_epsilon, 1 + clip_epsilon) * advantage).mean()
    value = agent.value.net(value_features).squeeze(-1)
    value_loss = (value - target).square().mean()
    with torch.no_grad():
        approx_kl = ((ratio - 1) - log_ratio).mean()
        clip_fraction = ((ratio - 1).abs() > clip_epsilon).float().mean()
    return policy + value_coef * value_loss - entropy_coef * entropy.mean(), approx_kl, clip_fraction


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
        critic_params = [p for c in self.critics for p in c.parameters()]
        self.critic_params, self.target_params = critic_params, [p for t in self.targets for p in t.parameters()]
        self.critic_opt = torch.optim.Adam(critic_params, lr=1e-3, fused=True)
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


def _plain_critics(ensemble) -> tuple[list[nn.Sequential], list[nn.Sequential], list, list]:
    """Separate critic MLPs copied from an ensemble, their targets, and both parameter lists."""
    critics = [ensemble_member(ensemble.net, e) for e in range(ensemble.members)]
    targets = [copy.deepcopy(c).requires_grad_(False) for c in critics]
    return critics, targets, [p for c in critics for p in c.parameters()], [p for t in targets for p in t.parameters()]


def _min_q(critics, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    x = torch.cat([obs, action], -1)
    return torch.stack([c(x).squeeze(-1) for c in critics]).min(0).values


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
        self.critics, self.targets, self.critic_params, self.target_params = _plain_critics(agent.critic)
        self.value_opt = torch.optim.Adam(self.value.parameters(), lr=3e-4, fused=True)
        self.critic_opt = torch.optim.Adam(self.critic_params, lr=3e-4, fused=True)
        self.actor_opt = torch.optim.Adam([*self.actor.parameters(), self.log_std], lr=3e-4, fused=True)
        self.gamma, self.tau, self.expectile, self.beta, self.max_weight = gamma, tau, expectile, beta, max_weight

    def step(self, batch: TensorDict) -> None:
        """The value step, the critic step, the actor step, then the targets."""
        obs, action, next_obs = batch[keys.INPUT], batch[keys.ACTION], batch[keys.NEXT_INPUT]
        with torch.no_grad():
            q = _min_q(self.targets, obs, action)
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
        loss = 0.0
        for critic in sac.critics:
            q_data = critic(x).squeeze(-1)
            q_sampled = critic(torch.cat([torch.cat([states, states, states]), sampled], -1)).squeeze(-1)
            scores = (q_sampled - density).view(3, size, n).permute(1, 0, 2).reshape(size, 3 * n)
            gap = torch.logsumexp(scores, -1).mean() - q_data.mean()
            loss = loss + ((q_data - y) ** 2).mean() + self.weight * gap
        sac.critic_opt.zero_grad(set_to_none=True)
        loss.backward()
        sac.critic_opt.step()
        sac.actor_and_targets(obs, alpha)
