"""rlcli's QR-DQN, TQC, TRPO and CrossQ losses beside sb3-contrib's on one minibatch, with copied weights.

The peer check of issue 35. For each algorithm an sb3-contrib model is built on a small env, its
weights are copied into an rlcli agent of the same shape, and one random minibatch (with
terminations) goes through both:

- QR-DQN (CartPole-v1): the quantile regression loss, sb3-contrib's ``train`` block (target network's
  greedy quantiles, ``quantile_huber_loss(sum_over_quantiles=True)``) against ``qrdqn_loss``.
  Convention: sb3-contrib lays the head out as [B, N, A], rlcli as [B, A, N] (the copy permutes rows).
- TQC (MountainCarContinuous-v0, whose actions are already in [-1, 1], so that both critics see the same
  numbers): the critic loss (pooled target quantiles, the top 2 per critic dropped) and the actor loss
  on the same sampled actions and log-probabilities, and the squashed Gaussian's log-probability.
- CrossQ (MountainCarContinuous-v0): the joint-forward critic loss with batch renormalization learning,
  the running statistics it leaves, and the actor loss, on the same sampled actions.
- TRPO (CartPole-v1 and Pendulum-v1): one policy step. The rollout is written into sb3-contrib's rollout
  buffer and ``TRPO.train`` runs; rlcli's ``policy_step`` runs on the same rows. Reported: the difference
  of the policy weights after the step, beside the step's own size. Conventions: sb3-contrib starts
  conjugate gradients from 1e-4 x N(0, 1) noise, rlcli from 0; both take 15 iterations.

It runs in the RL-Zoo peer venv (requirements-rlzoo.txt: sb3-contrib 2.9.2) with rlcli's runtime
dependencies added and its ``src`` on the path:

    /tmp/peer-rlzoo/bin/pip install torch==2.13.0 tensordict pydantic typer rich
    PYTHONPATH=src /tmp/peer-rlzoo/bin/python benchmarks/peers/sb3_contrib_losses.py

Prints one line per comparison, then one JSON line with every figure.
"""

from __future__ import annotations

import json
from importlib.metadata import version

import numpy as np
import torch
import torch.nn.functional as F
from sb3_contrib import QRDQN, TQC, TRPO, CrossQ
from sb3_contrib.common.utils import quantile_huber_loss
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.algos.crossq import crossq_critic_loss
from rlcli.algos.qrdqn import qrdqn_loss
from rlcli.algos.sac import sac_actor_loss
from rlcli.algos.tqc import tqc_critic_loss
from rlcli.config.load import validate_data
from rlcli.models.batch_renorm import BatchRenorm
from rlcli.models.ensemble import EnsembleLinear
from rlcli.run import build_run

GAMMA = 0.99
FIGURES: dict[str, float] = {}


def report(name: str, ours: torch.Tensor, theirs: torch.Tensor, scale: float | None = None) -> None:
    diff = float((ours.detach().double() - theirs.detach().double()).abs().max())
    FIGURES[name] = diff
    size = float(theirs.detach().abs().max()) if scale is None else scale
    print(f"{name:45s} max |rlcli - sb3-contrib| {diff:.3e}   (size {size:.3e})")


def rlcli_run(algo: dict, env: str, hidden: list[int], **network):
    data = {
        "run": {"device": "cpu", "seed": 0},
        "env": {"id": env, "num_envs": 1, "vectorization": "sync"},
        "network": {"hidden_sizes": hidden, "activation": network.pop("activation", "relu"), **network},
        "algo": algo,
        "collector": {"frames_per_batch": 8, "total_frames": 1000},
    }
    return build_run(validate_data(data))


def linears(module: nn.Module) -> list[nn.Linear]:
    return [m for m in module.modules() if isinstance(m, nn.Linear)]


@torch.no_grad()
def copy_linears(source: list[nn.Linear], target: list[nn.Linear]) -> None:
    assert len(source) == len(target), (len(source), len(target))
    for a, b in zip(source, target):
        b.weight.copy_(a.weight)
        b.bias.copy_(a.bias)


def minibatch(obs_dim: int, size: int, *, discrete: int | None = None, seed: int = 0) -> TensorDict:
    g = torch.Generator().manual_seed(seed)
    action = torch.randint(discrete, (size,), generator=g) if discrete else torch.rand(size, 1, generator=g) * 2 - 1
    return TensorDict(
        {
            keys.INPUT: torch.randn(size, obs_dim, generator=g),
            keys.ACTION: action,
            keys.REWARD: torch.randn(size, generator=g),
            keys.NEXT_INPUT: torch.randn(size, obs_dim, generator=g),
            keys.TERMINATED: torch.arange(size) % 5 == 1,
        },
        batch_size=[size],
    )


def qrdqn() -> None:
    model = QRDQN("MlpPolicy", "CartPole-v1", policy_kwargs={"net_arch": [64, 64], "n_quantiles": 10}, seed=0)
    run = rlcli_run({"name": "qrdqn", "quantiles": 10}, "CartPole-v1", [64, 64])
    agent = run.algo.agent
    actions, n = 2, 10
    # sb3-contrib's output row n * A + a is rlcli's a * N + n.
    order = torch.tensor([n_ * actions + a for a in range(actions) for n_ in range(n)])
    for theirs, ours in ((model.quantile_net, agent.q), (model.quantile_net_target, agent.target)):
        copy_linears(linears(theirs), linears(ours))
        last = linears(ours)[-1]
        with torch.no_grad():
            last.weight.copy_(linears(theirs)[-1].weight[order])
            last.bias.copy_(linears(theirs)[-1].bias[order])
    batch = minibatch(4, 32, discrete=2)
    with torch.no_grad():
        next_quantiles = model.quantile_net_target(batch[keys.NEXT_INPUT])
        greedy = next_quantiles.mean(dim=1, keepdim=True).argmax(dim=2, keepdim=True).expand(32, n, 1)
        next_quantiles = next_quantiles.gather(dim=2, index=greedy).squeeze(dim=2)
        done = batch[keys.TERMINATED].float().unsqueeze(1)
        target = batch[keys.REWARD].unsqueeze(1) + (1 - done) * GAMMA * next_quantiles
    current = model.quantile_net(batch[keys.INPUT])
    current = current.gather(dim=2, index=batch[keys.ACTION].view(-1, 1, 1).expand(32, n, 1)).squeeze(dim=2)
    theirs = quantile_huber_loss(current, target, sum_over_quantiles=True)
    ours = qrdqn_loss(agent, batch, gamma=GAMMA, double=False)["loss/q"]
    report("qrdqn loss/q", ours, theirs)
    run.close()


@torch.no_grad()
def copy_critics(critics: list[nn.Sequential], ensemble) -> None:
    """sb3-contrib's separate critics into rlcli's batched ensemble (weights [E, in, out])."""
    ours = [m for m in ensemble.net.modules() if isinstance(m, EnsembleLinear)]
    for e, critic in enumerate(critics):
        for layer, theirs in zip(ours, linears(critic)):
            layer.weight[e].copy_(theirs.weight.T)
            layer.bias[e, 0].copy_(theirs.bias)


@torch.no_grad()
def copy_actor(actor, ours) -> None:
    """sb3-contrib's latent MLP, ``mu`` and ``log_std`` into rlcli's one MLP of [mean, log_std] outputs."""
    theirs = linears(actor.latent_pi)
    mine = linears(ours.net)
    copy_linears(theirs, mine[:-1])
    mine[-1].weight.copy_(torch.cat([actor.mu.weight, actor.log_std.weight]))
    mine[-1].bias.copy_(torch.cat([actor.mu.bias, actor.log_std.bias]))


def sampled(agent, batch, seed: int):
    """rlcli's actor's reparameterized sample at ``input`` and at ``next_input`` with fixed noise."""
    g = torch.Generator().manual_seed(seed)
    noise = torch.randn(batch.batch_size[0], 1, generator=g)
    next_noise = torch.randn(batch.batch_size[0], 1, generator=g)
    action, log_prob = agent.actor(batch[keys.INPUT], noise=noise)
    with torch.no_grad():
        next_action, next_log_prob = agent.actor(batch[keys.NEXT_INPUT], noise=next_noise)
    return action, log_prob, next_action, next_log_prob, noise


def squashed_log_prob(model, obs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """sb3-contrib's log-probability of the action its actor draws with ``noise`` at ``obs``."""
    mean, log_std, _ = model.actor.get_action_dist_params(obs)
    gaussian = mean + log_std.exp() * noise
    dist = model.actor.action_dist.proba_distribution(mean, log_std)
    return dist.log_prob(torch.tanh(gaussian), gaussian)


def tqc() -> None:
    env = "MountainCarContinuous-v0"
    model = TQC("MlpPolicy", env, policy_kwargs={"net_arch": [64, 64], "n_quantiles": 5, "n_critics": 3}, seed=0)
    run = rlcli_run(
        {"name": "tqc", "quantiles": 5, "num_critics": 3, "top_quantiles_to_drop_per_net": 2}, env, [64, 64]
    )
    agent = run.algo.agent
    copy_critics(model.critic.q_networks, agent.critic)
    copy_critics(model.critic_target.q_networks, agent.critic_target)
    copy_actor(model.actor, agent.actor)
    batch = minibatch(2, 32)
    action, log_prob, next_action, next_log_prob, noise = sampled(agent, batch, 1)
    report("tqc actor log-prob", log_prob, squashed_log_prob(model, batch[keys.INPUT], noise))
    ent_coef = torch.tensor(0.3)
    kept = 3 * (5 - 2)
    with torch.no_grad():
        next_quantiles = model.critic_target(batch[keys.NEXT_INPUT], next_action)
        next_quantiles, _ = torch.sort(next_quantiles.reshape(32, -1))
        next_quantiles = next_quantiles[:, :kept] - ent_coef * next_log_prob.reshape(-1, 1)
        done = batch[keys.TERMINATED].float().unsqueeze(1)
        target = (batch[keys.REWARD].unsqueeze(1) + (1 - done) * GAMMA * next_quantiles).unsqueeze(1)
    current = model.critic(batch[keys.INPUT], batch[keys.ACTION])
    theirs = quantile_huber_loss(current, target, sum_over_quantiles=False)
    ours = tqc_critic_loss(
        agent, batch, next_action, next_log_prob, gamma=GAMMA, alpha=ent_coef, subset=None, kept=kept
    )["loss/critic"]
    report("tqc loss/critic", ours, theirs)
    q_pi = model.critic(batch[keys.INPUT], action.detach()).mean(dim=2).mean(dim=1, keepdim=True)
    theirs = (ent_coef * log_prob.detach().reshape(-1, 1) - q_pi).mean()
    ours = sac_actor_loss(
        agent, batch, action.detach(), log_prob.detach(), alpha=ent_coef, actor_q="mean", target_entropy=-1.0
    )["loss/actor"]
    report("tqc loss/actor", ours, theirs)
    run.close()


@torch.no_grad()
def copy_renorm(theirs, ours: BatchRenorm, member: int | None = None) -> None:
    pairs = (
        (theirs.ra_mean, ours.running_mean),
        (theirs.ra_var, ours.running_var),
        (theirs.scale, ours.scale),
        (theirs.bias, ours.shift),
    )
    for a, b in pairs:
        (b if member is None else b[member, 0]).copy_(a)
    ours.steps.copy_(theirs.steps)


def crossq() -> None:
    from sb3_contrib.common.torch_layers import BatchRenorm1d

    env = "MountainCarContinuous-v0"
    model = CrossQ("MlpPolicy", env, policy_kwargs={"net_arch": [64, 64]}, seed=0)
    run = rlcli_run({"name": "crossq", "num_critics": 2}, env, [64, 64])
    agent = run.algo.agent
    copy_critics(model.critic.q_networks, agent.critic)
    ours_norms = [m for m in agent.critic.net.modules() if isinstance(m, BatchRenorm)]
    for e, critic in enumerate(model.critic.q_networks):
        for theirs, ours in zip([m for m in critic.modules() if isinstance(m, BatchRenorm1d)], ours_norms):
            copy_renorm(theirs, ours, e)
    copy_actor(model.actor, agent.actor)
    actor_norms = [m for m in model.actor.modules() if isinstance(m, BatchRenorm1d)]
    for theirs, ours in zip(actor_norms, [m for m in agent.actor.modules() if isinstance(m, BatchRenorm)]):
        copy_renorm(theirs, ours)
    batch = minibatch(2, 32)
    _, _, next_action, next_log_prob, _ = sampled(agent, batch, 2)
    ent_coef = torch.tensor(0.3)
    all_obs = torch.cat([batch[keys.INPUT], batch[keys.NEXT_INPUT]])
    all_actions = torch.cat([batch[keys.ACTION], next_action])
    model.critic.set_bn_training_mode(True)
    all_q = torch.cat(model.critic(all_obs, all_actions), dim=1)
    model.critic.set_bn_training_mode(False)
    current, next_q = torch.split(all_q, 32, dim=0)
    with torch.no_grad():
        next_q, _ = torch.min(next_q.detach(), dim=1, keepdim=True)
        next_q = next_q - ent_coef * next_log_prob.reshape(-1, 1)
        done = batch[keys.TERMINATED].float().unsqueeze(1)
        target = batch[keys.REWARD].unsqueeze(1) + (1 - done) * GAMMA * next_q
    theirs = 0.5 * sum(F.mse_loss(q, target) for q in current.T[..., None])
    ours = crossq_critic_loss(agent, batch, next_action, next_log_prob, gamma=GAMMA, alpha=ent_coef)["loss/critic"]
    report("crossq loss/critic (joint forward)", ours, theirs)
    theirs_mean = [m.ra_mean for m in model.critic.q_networks[1].modules() if isinstance(m, BatchRenorm1d)]
    report("crossq critic running means after it", ours_norms[-1].running_mean[1, 0], theirs_mean[-1])
    # The actor's loss: its sample drawn with the actor's layers learning, judged by the critics' running statistics.
    g = torch.Generator().manual_seed(3)
    noise = torch.randn(32, 1, generator=g)
    from rlcli.models.batch_renorm import learning

    with learning(agent.actor):
        action, log_prob = agent.actor(batch[keys.INPUT], noise=noise)
    model.actor.set_bn_training_mode(True)
    theirs_log_prob = squashed_log_prob(model, batch[keys.INPUT], noise)
    model.actor.set_bn_training_mode(False)
    report("crossq actor log-prob (learning)", log_prob, theirs_log_prob)
    q_pi = torch.cat(model.critic(batch[keys.INPUT], action.detach()), dim=1).min(dim=1, keepdim=True).values
    theirs = (ent_coef * log_prob.detach().reshape(-1, 1) - q_pi).mean()
    ours = sac_actor_loss(
        agent, batch, action.detach(), log_prob.detach(), alpha=ent_coef, actor_q="min", target_entropy=-1.0
    )["loss/actor"]
    report("crossq loss/actor", ours, theirs)
    run.close()


def trpo(env: str) -> None:
    steps = 256
    model = TRPO("MlpPolicy", env, n_steps=steps, batch_size=steps, n_critic_updates=1, seed=0)
    run = rlcli_run(
        {"name": "trpo", "normalize_advantage": True},
        env,
        [64, 64],
        activation="tanh",
        init="orthogonal",
    )
    agent = run.algo.agent
    policy = model.policy
    discrete = hasattr(model.action_space, "n")
    copy_linears(linears(policy.mlp_extractor.policy_net) + [policy.action_net], linears(agent.policy))
    copy_linears(linears(policy.mlp_extractor.value_net) + [policy.value_net], linears(agent.value))
    if not discrete:
        with torch.no_grad():
            agent.policy.log_std.copy_(policy.log_std)
    g = torch.Generator().manual_seed(4)
    obs_dim = model.observation_space.shape[0]
    obs = torch.randn(steps, obs_dim, generator=g)
    with torch.no_grad():
        dist = policy.get_distribution(obs)
        action = dist.sample()
        log_prob = dist.log_prob(action)
    advantage = torch.randn(steps, generator=g)
    returns = torch.randn(steps, generator=g)
    buffer = model.rollout_buffer
    buffer.reset()
    buffer.observations[:] = obs.numpy().reshape(steps, 1, obs_dim)
    buffer.actions[:] = action.numpy().reshape(steps, 1, -1)
    buffer.log_probs[:] = log_prob.numpy().reshape(steps, 1)
    buffer.advantages[:] = advantage.numpy().reshape(steps, 1)
    buffer.returns[:] = returns.numpy().reshape(steps, 1)
    buffer.values[:] = 0.0
    buffer.full = True
    buffer.pos = steps
    before = torch.cat(
        [
            p.detach().reshape(-1)
            for p in [*agent.policy.net.parameters()] + ([] if discrete else [agent.policy.log_std])
        ]
    )
    rows = TensorDict(
        {
            keys.INPUT: obs,
            keys.ACTION: action,
            keys.LOG_PROB: log_prob,
            keys.ADVANTAGE: advantage,
            keys.VALUE_TARGET: returns,
            keys.VALID: torch.ones(steps, dtype=torch.bool),
        },
        batch_size=[steps],
    )
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    torch.manual_seed(0)
    model.train()
    stats = run.algo.policy_step(rows)
    mine = [*agent.policy.net.parameters()] + ([] if discrete else [agent.policy.log_std])
    ours = torch.cat([p.detach().reshape(-1) for p in mine])
    params = [*policy.mlp_extractor.policy_net.parameters(), *policy.action_net.parameters()]
    if not discrete:
        params.append(policy.log_std)
    theirs = torch.cat([p.detach().reshape(-1) for p in params])
    # In sb3-contrib's order: the policy MLP, its output layer, then (Box) the log-std.
    step = float((theirs - before).abs().max())
    report(f"trpo {env} policy weights after the step", ours, theirs, scale=step)
    print(
        f"{'':45s} line search accepted: rlcli {stats['stats/line_search']:.0f}, step fraction {stats['stats/step_fraction']:.3f}"
    )
    run.close()


def main() -> None:
    torch.set_num_threads(1)
    np.random.seed(0)
    qrdqn()
    tqc()
    crossq()
    trpo("CartPole-v1")
    trpo("Pendulum-v1")
    print(json.dumps({"sb3_contrib": version("sb3-contrib"), "torch": torch.__version__, "max_abs_diff": FIGURES}))


if __name__ == "__main__":
    main()
