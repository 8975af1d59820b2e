"""Deep Q-Networks (Mnih et al., 2015) with double Q-learning (van Hasselt et al., 2016),
n-step returns and optional prioritized replay, on the shared replay buffer."""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Generic, TypeVar

import torch
import torch.nn.functional as F
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.algos.context import BuildContext
from rlcli.algos.settings import QSettings
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import DQNConfig
from rlcli.learning.advantages import bootstrapped_target
from rlcli.learning.exploration import EpsilonGreedy, epsilon_greedy, masked_argmax, masked_max
from rlcli.learning.off_policy import REPLAY_PHASES, ReplayLearner
from rlcli.learning.target_networks import TargetSchedule
from rlcli.models.mlp import mlp
from rlcli.models.normalization import ObservationNormalizer
from rlcli.replay import OffPolicyReplay, ReplaySettings, Spec, build_replay, transition_spec
from rlcli.timing import Timer

if TYPE_CHECKING:
    from rlcli.carry import Carry


QNet = TypeVar("QNet", bound=nn.Module)
"""A Q-network: DQN's ``nn.Sequential``, QR-DQN's quantile network."""


class QAgent(nn.Module, Generic[QNet]):
    """Online and target Q-networks over one observation normalizer.

    ``num_actions`` and ``epsilon_end`` (the exploration rate of stochastic evaluation) are
    plain attributes, not part of the state_dict.
    """

    # Memoryless: its policy reads only the carry's mask (rlcli.carry).
    memory = None

    def __init__(self, obs_norm: ObservationNormalizer, q: QNet, *, num_actions: int, epsilon_end: float):
        super().__init__()
        self.obs_norm = obs_norm
        self.q = q
        self.target = copy.deepcopy(q).requires_grad_(False)
        self.num_actions, self.epsilon_end = num_actions, epsilon_end
        self.samples = epsilon_end > 0

    @torch.no_grad()
    def actions(
        self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator, carry: Carry | None = None
    ) -> torch.Tensor:
        """Evaluation actions ([N] int64) for raw ``observation`` ([N, *obs]): greedy, or epsilon-greedy
        at ``epsilon_end`` (the rate training settles at), whatever the collection schedule says; among
        the actions ``carry``'s mask allows."""
        mask = None if carry is None else carry.mask
        greedy = masked_argmax(self.q(self.obs_norm(observation)), mask)
        if deterministic:
            return greedy
        return epsilon_greedy(greedy, self.epsilon_end, self.num_actions, generator, mask)


def dqn_loss(
    agent: QAgent[nn.Sequential], batch: TensorDict, *, gamma: float, double: bool, huber: bool
) -> dict[str, torch.Tensor]:
    """TD loss of one replay minibatch.

    ``target = reward + discount * (1 - terminated) * Q_target(s', a')`` where
    ``a'`` is the online network's argmax (double) or the target's own (plain),
    and ``discount`` is the ``discount`` key (n-step) or ``gamma``. Truncated
    transitions bootstrap like any other: only termination drops it. With action
    masks, ``a'`` and the max range over the next state's allowed actions only.

    Reads ``input``, ``action``, ``reward``, ``next_input``, ``terminated`` and,
    when present, ``discount``, ``weight`` (importance weights) and ``next_action_mask``
    ([B, A] bool), each [B].
    Returns ``loss/q``, ``stats/q_mean``, ``stats/td_abs`` and ``td_error``
    ([B], detached, for priorities).
    """
    q = agent.q(batch[keys.INPUT]).gather(1, batch[keys.ACTION].unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        next_input = batch[keys.NEXT_INPUT]
        next_target = agent.target(next_input)
        next_mask = batch.get(keys.NEXT_ACTION_MASK, None)
        if double:
            choice = masked_argmax(agent.q(next_input), next_mask).unsqueeze(1)
            next_q = next_target.gather(1, choice).squeeze(1)
        else:
            next_q = masked_max(next_target, next_mask)
        target = bootstrapped_target(batch, next_q, gamma=gamma)
    td = q - target
    elementwise = F.smooth_l1_loss(q, target, reduction="none") if huber else td.square()
    weight = batch.get(keys.WEIGHT, None)
    loss = elementwise.mean() if weight is None else (weight * elementwise).mean()
    return {
        "loss/q": loss,
        "stats/q_mean": q.detach().mean(),
        "stats/td_abs": td.detach().abs().mean(),
        "td_error": td.detach(),
    }


Objective = Callable[[QAgent[QNet], TensorDict], dict[str, torch.Tensor]]
"""A Q-learner's loss terms of one replay minibatch: ``loss/q`` and ``td_error`` ([B], detached, for
priorities) among them, as :func:`dqn_loss` returns them."""


class DQN(Generic[QNet]):
    """Epsilon-greedy collection; each batch extends the buffer, then ``utd_ratio`` gradient
    steps per frame once ``learning_starts`` frames are in, and target updates on schedule.

    ``objective`` is the loss of a minibatch: :func:`dqn_loss` for DQN, the quantile regression
    loss for QR-DQN (:mod:`rlcli.algos.qrdqn`), which shares everything else."""

    def __init__(
        self,
        cfg: QSettings,
        ctx: BuildContext,
        *,
        agent: QAgent[QNet],
        replay: OffPolicyReplay,
        objective: Objective[QNet],
    ):
        self.cfg = cfg
        self.agent = agent
        self.objective = objective
        self.step = ctx.gradient_step(agent.q.parameters())
        self.learner = ReplayLearner(replay, {"step": self.step}, batch_size=cfg.batch_size, seed=ctx.seed, total=TOTAL)
        self.replay = replay
        self.ingest_and_sample = self.learner.ingest_and_sample
        self.target = TargetSchedule(agent.target, agent.q, tau=cfg.tau, interval=cfg.target_update_interval)
        self.updates = 0
        # Uniform actions during warm-up, then a linear decay over the first exploration_fraction.
        self.exploration = EpsilonGreedy(
            agent.num_actions,
            start=cfg.epsilon_start,
            end=cfg.epsilon_end,
            decay_frames=cfg.exploration_fraction * ctx.collector.frames,
        )
        self.exploration.advance(replay.frames, learning=replay.learning)

    @torch.no_grad()
    def act(self, observation: torch.Tensor, generator: torch.Generator, carry: Carry | None = None) -> TensorDict:
        """Epsilon-greedy ``action`` ([N] int64) for raw ``observation`` ([N, *obs]), among the actions
        ``carry``'s mask allows."""
        mask = None if carry is None else carry.mask
        greedy = self._greedy if mask is None else partial(self._greedy, mask=mask)
        action = self.exploration(observation, greedy, generator, mask)
        return TensorDict({keys.ACTION: action}, batch_size=[observation.shape[0]])

    def _greedy(self, observation: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The online network's argmax ([N] int64) for raw ``observation``, among the actions ``mask``
        allows ([N, A] bool)."""
        return masked_argmax(self.agent.q(self.agent.obs_norm(observation)), mask)

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """The objective's terms plus ``loss/total``, the scalar to minimise."""
        return self.learner.loss(self.objective(self.agent, batch))

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Store the batch, then the gradient steps it pays for; returns means over those steps."""
        stats = {"stats/epsilon": self.exploration.epsilon} | self.learner.learn(batch, timer, self.update)
        self.exploration.advance(self.replay.frames, learning=self.replay.learning)
        return stats

    def update(self, sample: TensorDict, timer: Timer) -> dict[str, torch.Tensor]:
        """One gradient step on a normalized replay ``sample``, the priority update and the target
        update when due; returns the loss terms (the learner reports ``loss/total`` of their means)."""
        with timer.phase("update.forward"):
            terms = self.loss(sample)
        td_error = terms.pop("td_error")
        self.step(terms.pop("loss/total"), timer)
        self.replay.prioritize(sample, td_error, timer)
        with timer.phase("update.target"):
            self.target.step()
        self.updates += 1
        return terms

    def state_dict(self, *, replay: bool = True) -> dict:
        return self.learner.state_dict(replay=replay) | {
            "target": self.target.state_dict(),
            "updates": self.updates,
            "epsilon": self.exploration.epsilon,
        }

    def load_state_dict(self, state: dict) -> None:
        self.learner.load_state_dict(state)
        self.target.load_state_dict(state["target"])
        self.updates = state["updates"]
        # Saved, not recomputed: a resume may raise total_frames, and with it the decay's horizon.
        self.exploration.epsilon = state["epsilon"]


PHASES = REPLAY_PHASES
METRICS = (
    "loss/q",
    "loss/total",
    "stats/q_mean",
    "stats/td_abs",
    "stats/gradient_steps",
    "stats/epsilon",
    "stats/buffer_size",
    "optim/lr",
)
# loss/total, for loss() and for the means learn() reports: these terms summed in this order (total_loss).
TOTAL = ("loss/q",)


def build_agent(cfg: DQNConfig, ctx: BuildContext) -> QAgent[nn.Sequential]:
    """The Q-network (the encoder, then ``network.value_sizes``) for ``ctx``'s Discrete actions, its target and the
    observation statistics, on the device: what evaluation plays."""
    num_actions = int(ctx.discrete_actions.n)
    q = q_network(ctx, num_actions)
    return QAgent(ctx.observation_normalizer(), q, num_actions=num_actions, epsilon_end=cfg.epsilon_end).to(ctx.device)


def q_network(ctx: BuildContext, outputs: int) -> nn.Sequential:
    """``ctx``'s encoder, then an MLP of ``network.value_sizes`` to ``outputs`` linear outputs."""
    encoder = ctx.encoder()
    # The encoder is part of the Q-network: the target copies it with the rest.
    return nn.Sequential(
        encoder,
        mlp(
            encoder.out_features,
            ctx.network.value_sizes,
            outputs,
            activation=ctx.network.activation,
            orthogonal=ctx.network.init == "orthogonal",
            out_gain=1.0,
        ),
    )


def build(cfg: DQNConfig, ctx: BuildContext) -> DQN[nn.Sequential]:
    """DQN for ``ctx``'s spaces: the agent of :func:`build_agent`, its optimizer and replay.

    Raises:
        ConfigError: the buffer would not fit in free memory (or disk), or its folder is not writable.
    """
    agent = build_agent(cfg, ctx)
    spec = q_transitions(cfg, ctx)
    objective = partial(dqn_loss, gamma=cfg.gamma, double=cfg.double, huber=cfg.loss == "huber")
    return DQN(cfg, ctx, agent=agent, replay=build_replay(cfg, ctx, spec, agent.obs_norm), objective=objective)


def q_transitions(cfg: ReplaySettings, ctx: BuildContext) -> Spec:
    """The replay's transition spec of a Q-learner on ``ctx``'s Discrete actions: int64 actions, and the
    next state's action mask where the run has masks (the target's max ranges over legal actions)."""
    return transition_spec(
        ctx.observation_space,
        ((), torch.int64),
        n_step=cfg.n_step,
        next_mask=int(ctx.discrete_actions.n) if ctx.action_masks else None,
    )


SPEC = AlgorithmSpec(
    config=DQNConfig,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    metrics=METRICS,
    total=TOTAL,
)
