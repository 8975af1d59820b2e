"""Quantile-regression DQN (Dabney et al., 2018): each action's return distribution as ``quantiles``
estimates at fixed fractions, regressed onto the target distribution with the quantile Huber loss; the
policy is greedy (epsilon-greedy while collecting) in the mean of the quantiles. Everything else (the
replay, n-step returns, priorities, double Q-learning, target updates, exploration, masks) is DQN's
(:class:`rlcli.algos.dqn.DQN`), with this module's loss as its objective."""

from __future__ import annotations

from functools import partial

import torch
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.algos.context import BuildContext
from rlcli.algos.dqn import DQN, METRICS, TOTAL, QAgent, q_network, q_transitions
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import QRDQNConfig
from rlcli.learning.advantages import bootstrapped_target
from rlcli.learning.exploration import masked_argmax
from rlcli.learning.off_policy import REPLAY_PHASES
from rlcli.learning.quantiles import quantile_huber
from rlcli.replay import build_replay


class QuantileQ(nn.Module):
    """A network of ``actions * quantiles`` outputs read as each action's return quantiles; called,
    it returns their means, the action values that acting and DQN's machinery read."""

    def __init__(self, net: nn.Module, actions: int, quantiles: int):
        super().__init__()
        self.net = net
        self.actions, self.count = actions, quantiles

    def quantiles(self, obs) -> torch.Tensor:
        """[B, A, N] float32: N return quantiles of each of A actions for normalized ``obs`` [B, ...]."""
        out = self.net(obs)
        return out.view(out.shape[0], self.actions, self.count)

    def forward(self, obs) -> torch.Tensor:
        """[B, A] float32: the mean of each action's quantiles."""
        return self.quantiles(obs).mean(-1)


def qrdqn_loss(agent: QAgent[QuantileQ], batch: TensorDict, *, gamma: float, double: bool) -> dict[str, torch.Tensor]:
    """Quantile regression loss of one replay minibatch (Dabney et al., 2018, algorithm 1).

    The target distribution is ``reward + discount * (1 - terminated) * theta'_j(s', a')`` for each of
    the target network's N quantiles ``theta'_j`` at the next action ``a'``, the argmax of the quantile
    means: the online network's (``double``) or the target's own. Each row's loss is the quantile Huber
    loss summed over the N estimates of ``Q(s, a)`` and averaged over the N targets, as sb3-contrib's
    ``quantile_huber_loss(sum_over_quantiles=True)``; rows are averaged, weighted by ``weight``.

    Reads what :func:`rlcli.algos.dqn.dqn_loss` reads (``input``, ``action``, ``reward``,
    ``next_input``, ``terminated``; ``discount``, ``weight``, ``next_action_mask`` when present).
    Returns ``loss/q``, ``stats/q_mean`` (of the quantile means), ``stats/td_abs`` and ``td_error``
    ([B], detached: the difference of the target's and the estimate's means, for priorities).
    """
    quantiles = agent.q.quantiles(batch[keys.INPUT])
    index = batch[keys.ACTION].view(-1, 1, 1).expand(-1, 1, quantiles.shape[-1])
    current = quantiles.gather(1, index).squeeze(1)
    with torch.no_grad():
        next_input = batch[keys.NEXT_INPUT]
        next_quantiles = agent.target.quantiles(next_input)
        chooser = agent.q(next_input) if double else next_quantiles.mean(-1)
        choice = masked_argmax(chooser, batch.get(keys.NEXT_ACTION_MASK, None))
        next_value = next_quantiles.gather(1, choice.view(-1, 1, 1).expand(-1, 1, next_quantiles.shape[-1])).squeeze(1)
        target = bootstrapped_target(batch, next_value, gamma=gamma)
    per_row = quantile_huber(current.unsqueeze(1), target).sum(-1).squeeze(1)
    weight = batch.get(keys.WEIGHT, None)
    loss = per_row.mean() if weight is None else (weight * per_row).mean()
    td = (current.detach().mean(-1) - target.mean(-1)).abs()
    return {"loss/q": loss, "stats/q_mean": current.detach().mean(), "stats/td_abs": td.mean(), "td_error": td}


PHASES = REPLAY_PHASES


def build_agent(cfg: QRDQNConfig, ctx: BuildContext) -> QAgent[QuantileQ]:
    """The quantile network (the encoder, then ``network.value_sizes`` to actions x quantiles), its target
    and the observation statistics, on the device: what evaluation plays."""
    num_actions = int(ctx.discrete_actions.n)
    q = QuantileQ(q_network(ctx, num_actions * cfg.quantiles), num_actions, cfg.quantiles)
    return QAgent(ctx.observation_normalizer(), q, num_actions=num_actions, epsilon_end=cfg.epsilon_end).to(ctx.device)


def build(cfg: QRDQNConfig, ctx: BuildContext) -> DQN[QuantileQ]:
    """QR-DQN for ``ctx``'s spaces: the agent of :func:`build_agent`, its optimizer and replay, on DQN's
    learner with :func:`qrdqn_loss`.

    Raises:
        ConfigError: the buffer would not fit in free memory (or disk), or its folder is not writable.
    """
    agent = build_agent(cfg, ctx)
    replay = build_replay(cfg, ctx, q_transitions(cfg, ctx), agent.obs_norm)
    return DQN(cfg, ctx, agent=agent, replay=replay, objective=partial(qrdqn_loss, gamma=cfg.gamma, double=cfg.double))


SPEC = AlgorithmSpec(
    config=QRDQNConfig,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    # DQN's rows: loss/q is the quantile regression loss here.
    metrics=METRICS,
    total=TOTAL,
)
