"""Bare-torch floors of the policy-gradient family: the usual reversed-loop GAE, PPO's loss and TRPO's
whole update written plainly in torch, to price the library's ``advantage``, ``loss`` and ``onpolicy``
figures against."""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from tensordict import TensorDict

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


class BareActLoop:
    """The collection loop written plainly, for an on-policy preset with Discrete or Box actions on flat
    observations: each step the env's observations become a float tensor, plain copies of the policy and
    value MLPs run on them, an action is sampled (``torch.multinomial`` over the softmax, or the Gaussian's mean
    plus noise) with its log-probability, and the envs step. Nothing is stored. The floor that the collector's
    step is priced against: what is left above it is the collector's own bookkeeping."""

    def __init__(self, agent, envs, steps: int, seed: int):
        head = agent.policy
        self.policy, self.value = copy.deepcopy(head.net), copy.deepcopy(agent.value.net)
        self.log_std = head.log_std.detach().clone() if hasattr(head, "log_std") else None
        self.envs, self.steps = envs, steps
        self.generator = torch.Generator().manual_seed(seed)
        self.obs, _ = envs.reset(seed=seed)

    @torch.no_grad()
    def run(self) -> None:
        for _ in range(self.steps):
            obs = torch.from_numpy(self.obs).float()
            out = self.policy(obs)
            if self.log_std is None:
                log_probs = F.log_softmax(out, -1)
                action = torch.multinomial(log_probs.exp(), 1, generator=self.generator)
                log_prob = log_probs.gather(-1, action).squeeze(-1)
                action = action.squeeze(-1)
            else:
                std = self.log_std.exp()
                noise = torch.randn(out.shape, generator=self.generator)
                action = out + std * noise
                log_prob = (-0.5 * noise.square() - self.log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
            value = self.value(obs)
            del log_prob, value
            self.obs = self.envs.step(action.numpy())[0]

    def close(self) -> None:
        self.envs.close()
