"""What the on-policy algorithms (those whose config models are in :mod:`rlcli.config.algos.on_policy`)
share around their losses: the actor-critic
and reward scaler built for a run, a collected rollout made ready for the update (normalized inputs,
bootstrap values, scaled rewards, advantages), its rows for the loss, the :class:`RolloutLearner`
that holds them with the gradient step, and the :class:`SingleStepLearner` of the algorithms that
take one gradient step per rollout (A2C, REINFORCE)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import torch

from rlcli import keys
from rlcli.config.algos import gsde_on
from rlcli.learning.advantages import add_advantages, episode_ended, masked_mean, normalized_advantage
from rlcli.models.actor_critic import ActorCritic, build_actor_critic
from rlcli.models.gsde import NoiseSchedule, StateDependentHead
from rlcli.models.normalization import RewardScaler, clip_rewards

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.algos.context import BuildContext
    from rlcli.carry import Carry
    from rlcli.timing import Timer


ROLLOUT_PHASES = ("update.advantage", "update.forward", "update.backward", "update.optimizer")
"""The timed sub-phases of an on-policy ``learn``: the rollout's advantages, then the loss's forward
and the gradient step."""


PER_STEP = (keys.ACTION_MASK, keys.MEMORY, keys.FIRST)
"""What a policy's loss reads of a step beside the algorithm's own keys, in runs that have them: the
action mask the action was drawn under, and the memory it was drawn from."""


def build_agent(cfg, ctx: BuildContext) -> ActorCritic:
    """The actor-critic alone, sized from ``ctx``'s spaces, on the device: what evaluation plays (with a gSDE
    head where ``cfg`` asks for one)."""
    return build_actor_critic(ctx, gsde=gsde_on(cfg)).to(ctx.device)


@torch.no_grad()
def prepare_rollout(
    agent: ActorCritic,
    reward_scaler: RewardScaler,
    batch: TensorDict,
    *,
    gamma: float,
    lam: float,
    value_target: str = "gae",
    baseline: bool = True,
    clip_reward: float | None = None,
) -> TensorDict:
    """Make a raw on-policy ``[T, N]`` batch ready for the update.

    Writes ``input`` (the observations normalized with the statistics the
    rollout was collected under, so the update sees exactly what produced
    ``log_prob`` and ``value``), ``next_value`` (the critic on
    ``next_observation``, the true final observation at episode ends),
    ``advantage`` and ``value_target`` by the estimator ``value_target`` names
    (:data:`rlcli.learning.advantages.ESTIMATORS`). Rewards are scaled by ``reward_scaler``
    after it has seen this rollout's returns, and clipped to ``clip_reward`` before that; the
    batch's ``reward`` stays raw.

    Without ``baseline`` the critic takes no part: no ``next_value`` is written, and the
    estimator sees values of 0, so that ``advantage`` and ``value_target`` are the discounted
    returns themselves, bootstrapped from nothing (``td1``: Monte-Carlo returns).
    """
    norm = agent.obs_norm
    batch[keys.INPUT] = norm(batch[keys.OBSERVATION])
    if baseline:
        batch[keys.NEXT_VALUE] = next_values(agent, batch)
    reward = clip_rewards(batch[keys.REWARD], clip_reward)
    reward_scaler.observe(reward, batch[keys.TERMINATED] | batch[keys.TRUNCATED], batch[keys.VALID])
    reward = reward_scaler(reward)
    if baseline:
        return add_advantages(batch, estimator=value_target, gamma=gamma, lam=lam, reward=reward)
    zeros = torch.zeros_like(reward)
    return add_advantages(
        batch, estimator=value_target, gamma=gamma, lam=lam, reward=reward, value=zeros, next_value=zeros
    )


@torch.no_grad()
def next_values(agent: ActorCritic, batch: TensorDict) -> torch.Tensor:
    """V of each step's ``next_observation`` ([T, N]) under the weights and statistics the rollout was
    collected with.

    With an encoder that has weights (a CNN), a forward pass over the whole rollout would cost as
    much as collecting it: where a step's next observation is the next step's observation (every
    step but the last, and but episode ends of envs that reset in the same step), its value is
    the ``value`` stored when acting on it, and only the others are evaluated. Parameterless
    encoders (vectors, one-hot) evaluate every row, as cheap as it is exact.
    """
    norm, next_obs = agent.obs_norm, batch[keys.NEXT_OBSERVATION]
    if agent.memory is not None:
        return _recurrent_next_values(agent, batch)
    if not any(True for _ in agent.encoder.parameters()):
        return agent.state_value(norm(next_obs))
    value = batch[keys.VALUE]
    fresh = torch.ones_like(value, dtype=torch.bool)
    fresh[:-1] = _differs(next_obs[:-1], batch[keys.OBSERVATION][1:])
    out = torch.empty_like(value)
    out[:-1] = value[1:]
    rows = fresh.nonzero(as_tuple=True)
    out[rows] = agent.state_value(norm(next_obs[rows]))
    return out


@torch.no_grad()
def _recurrent_next_values(agent: ActorCritic, batch: TensorDict) -> torch.Tensor:
    """:func:`next_values` of a policy with memory: where the memory goes on from one step to the next
    (same episode, no reset), the next step's stored ``value``; elsewhere (the rollout's last step, an
    episode's final observation) the critic on ``next_observation`` with the memory after the step,
    re-run from the stored ``memory`` (the collection weights: nothing has been updated yet)."""
    value, first = batch[keys.VALUE], batch[keys.FIRST]
    fresh = torch.ones_like(value, dtype=torch.bool)
    fresh[:-1] = first[1:] | _differs(batch[keys.NEXT_OBSERVATION][:-1], batch[keys.OBSERVATION][1:])
    out = torch.empty_like(value)
    out[:-1] = value[1:]
    rows = fresh.nonzero(as_tuple=True)
    norm = agent.obs_norm
    out[rows] = agent.successor_value(
        batch[keys.INPUT][rows], first[rows], batch[keys.MEMORY][rows], norm(batch[keys.NEXT_OBSERVATION][rows])
    )
    return out


def _differs(a, b) -> torch.Tensor:
    """Per [T, N] row, whether observations ``a`` and ``b`` (tensors or TensorDicts) differ anywhere."""
    if isinstance(a, torch.Tensor):
        return (a != b).flatten(2).any(-1)
    return torch.stack([_differs(a.get(key), b.get(key)) for key in a.keys()]).any(0)


class Evaluated(NamedTuple):
    """What a policy-gradient loss needs of a minibatch under the current weights."""

    log_prob: torch.Tensor
    """[B] float32: of the batch's actions."""
    entropy: torch.Tensor
    """[B] float32."""
    value: torch.Tensor
    """[B] float32: the critic's."""
    advantage: torch.Tensor
    """[B] float32: the batch's, normalized over its valid rows when asked."""
    mean: Callable[[torch.Tensor], torch.Tensor]
    """The mean over the valid rows (:func:`masked_mean`)."""


def evaluate_minibatch(agent: ActorCritic, batch: TensorDict, *, normalize_advantage: bool) -> Evaluated:
    """Log-probabilities, entropies and values of a minibatch, its advantages and its masked mean.

    Reads ``input``, ``action`` and ``advantage`` ([B, ...]), and ``valid`` ([B] bool) when
    present: the mean and the advantage normalization are then over the valid rows only.
    """
    log_prob, entropy, value = agent.evaluate(
        batch[keys.INPUT],
        batch[keys.ACTION],
        mask=batch.get(keys.ACTION_MASK, None),
        memory=batch.get(keys.MEMORY, None),
        first=batch.get(keys.FIRST, None),
    )
    valid = batch.get(keys.VALID, None)
    advantage = batch[keys.ADVANTAGE]
    if normalize_advantage:
        advantage = normalized_advantage(advantage, valid)
    return Evaluated(log_prob, entropy, value, advantage, masked_mean(valid))


class RolloutLearner:
    """What an on-policy ``learn`` does around the algorithm's loss, and the state it keeps.

    Builds the actor-critic and reward scaler of ``cfg`` for ``ctx`` and one gradient step over
    every weight (or over the weights ``trained`` picks of the actor-critic); :meth:`rows` makes a fresh rollout ready for the loss, :meth:`finish` ends the
    iteration. ``names`` are the keys the algorithm's loss reads. Without ``baseline`` the
    critic takes no part in the targets (see :func:`prepare_rollout`) and the steps of episodes
    the rollout cut are left out of the loss.
    """

    def __init__(
        self,
        cfg,
        ctx: BuildContext,
        *,
        names: tuple[str, ...],
        baseline: bool = True,
        trained: Callable[[ActorCritic], list[torch.nn.Parameter]] | None = None,
    ):
        self.agent = build_agent(cfg, ctx)
        self.reward_scaler = RewardScaler(
            ctx.env.num_envs, gamma=cfg.gamma, enabled=ctx.env.normalize_reward, group=ctx.group
        ).to(ctx.device)
        # The weights the gradient step moves: every one, or those ``trained`` picks (TRPO: the value's).
        networks = None if trained is not None else self.agent.networks()
        self.step = ctx.gradient_step(
            self.agent.parameters() if trained is None else trained(self.agent), networks=networks
        )
        self.gamma, self.lam, self.names = cfg.gamma, cfg.return_lambda, names
        self.value_target, self.baseline = cfg.value_target, baseline
        self.clip_reward = ctx.env.clip_reward
        # With memory the update takes sequences of this many steps per env, time first ([L, C]).
        steps = ctx.collector.frames_per_batch // ctx.env.num_envs
        self.sequence = None if self.agent.memory is None else cfg.sequence(steps)
        # A team group whose agents have their own weights: rows are drawn a whole frame (every agent) at a time.
        self.together = ctx.agents_apart
        # gSDE: the noise matrices the collection holds, drawn at each rollout's start and every sde_sample_freq steps.
        self.exploration: NoiseSchedule | None = None
        if gsde_on(cfg):
            # build_actor_critic(gsde=True) made the state-dependent head.
            assert isinstance(self.agent.policy, StateDependentHead)
            self.exploration = NoiseSchedule(
                self.agent.policy.noise, rollout_steps=steps, sample_freq=cfg.sde_sample_freq
            )
        self.act = self.agent.act if self.exploration is None else self._act_with_held_noise

    def _act_with_held_noise(
        self, observation: torch.Tensor, generator: torch.Generator, carry: Carry | None = None
    ) -> TensorDict:
        """The agent's ``act`` with gSDE's held noise matrices, drawn with ``generator`` when due."""
        # The act of a run with gSDE, whose exploration schedule is set.
        assert self.exploration is not None
        return self.agent.act(observation, generator, carry, noise=self.exploration(observation.shape[0], generator))

    def rows(self, batch: TensorDict, timer: Timer) -> TensorDict:
        """Every row of the ``[T, N]`` ``batch`` flattened to [T * N] with ``names`` and ``valid``,
        after its advantages are written into it (timed as ``update.advantage``)."""
        with timer.phase("update.advantage"):
            self._prepare(batch)
        # Every row, invalid ones masked in the loss: the same rows on every rank (NEXT_STEP envs have
        # a varying number of reset steps), and a batch of only reset steps is a loss of 0, not a NaN.
        rows = self._loss_rows(batch)
        if self.sequence is not None:
            return sequences(rows, self.sequence)
        return rows.reshape(-1) if self.together == 1 else rows.reshape(-1, self.together)

    def units(self, flat: TensorDict) -> int:
        """What :meth:`rows` returned holds of what minibatches are drawn from: rows, frames of agents apart,
        or sequences."""
        return flat.batch_size[0] if self.sequence is None else flat.batch_size[-1]

    def per_minibatch(self, rows: int) -> int:
        """Units of a minibatch of ``rows`` rows: rows, or the frames or sequences that hold them."""
        return max(rows // self.together, 1) if self.sequence is None else rows // self.sequence

    def take(self, flat: TensorDict, index: torch.Tensor) -> TensorDict:
        """The units at ``index`` ([M] int64) of what :meth:`rows` returned: [M] rows, [M, agents] frames, or
        [L, M] sequences."""
        return flat[index] if self.sequence is None else flat[:, index]

    def finish(self, batch: TensorDict) -> None:
        """Advance the schedule and fold the rollout's valid observations into the statistics."""
        self.step.end_iteration()
        # Only now: the update had to see the inputs the rollout was collected with.
        self.agent.obs_norm.observe(batch[keys.OBSERVATION], batch[keys.VALID])

    def ingest_and_sample(self, batch: TensorDict, size: int, generator: torch.Generator) -> TensorDict:
        """``size`` random valid rows of ``batch`` after its advantages are written into it."""
        self._prepare(batch)
        rows = self._loss_rows(batch)
        if self.sequence is not None:
            # Sequences, time first: ``size`` rows' worth of them, drawn whole.
            chunks = sequences(rows, self.sequence)
            count = max(size // self.sequence, 1)
            return chunks[:, torch.randint(chunks.batch_size[1], (count,), generator=generator, device=chunks.device)]
        if self.together > 1:
            # Whole frames, absent agents' rows masked: each agent's weights see their own rows.
            frames = rows.reshape(-1, self.together)
            count = max(size // self.together, 1)
            return frames[torch.randint(frames.batch_size[0], (count,), generator=generator, device=frames.device)]
        flat = rows.exclude(keys.VALID)[rows[keys.VALID]]
        return flat[torch.randint(flat.batch_size[0], (size,), generator=generator, device=flat.device)]

    def _prepare(self, batch: TensorDict) -> None:
        prepare_rollout(
            self.agent,
            self.reward_scaler,
            batch,
            gamma=self.gamma,
            lam=self.lam,
            value_target=self.value_target,
            baseline=self.baseline,
            clip_reward=self.clip_reward,
        )

    def _loss_rows(self, batch: TensorDict) -> TensorDict:
        """The ``[T, N]`` rows of a prepared ``batch`` with ``names`` and ``valid``, the rows the loss
        counts: without a baseline, not the steps of episodes the rollout cut, whose returns lack
        the rewards after it and have no critic to stand in for them. The batch's own ``valid``
        stays as it is (the statistics take in every valid observation)."""
        rows = batch.select(*self.names, keys.VALID, *(key for key in PER_STEP if key in batch.keys()))
        if not self.baseline:
            rows[keys.VALID] = rows[keys.VALID] & episode_ended(batch[keys.TERMINATED], batch[keys.TRUNCATED])
        return rows

    def state_dict(self) -> dict:
        state = {"step": self.step.state_dict(), "reward_scaler": self.reward_scaler.state_dict()}
        return state if self.exploration is None else state | {"exploration": self.exploration.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.step.load_state_dict(state["step"])
        self.reward_scaler.load_state_dict(state["reward_scaler"])
        if self.exploration is not None:
            self.exploration.load_state_dict(state["exploration"])


def sequences(rows: TensorDict, length: int) -> TensorDict:
    """The ``[T, N]`` ``rows`` cut into sequences of ``length`` steps, time first: ``[length, T / length * N]``
    (each env's rollout in order, one column per sequence), for backpropagation through time."""
    steps, envs = rows.batch_size
    count = steps // length

    def cut(x: torch.Tensor) -> torch.Tensor:
        tail = x.shape[2:]
        return x.reshape(count, length, envs, *tail).transpose(0, 1).reshape(length, count * envs, *tail)

    sequences = rows.apply(cut, batch_size=[length, count * envs])
    # Not in place: apply returns the new TensorDict.
    assert sequences is not None
    return sequences


Objective = Callable[[ActorCritic, "TensorDict"], dict[str, torch.Tensor]]
"""An algorithm's named loss terms of a batch of rows under an actor-critic, ``loss/total`` among them."""


class SingleStepLearner:
    """The algorithm object of an on-policy method that takes one gradient step per rollout, on every
    row the loss counts (A2C, REINFORCE): the method is its ``objective`` and its config.

    Builds the :class:`RolloutLearner` of ``cfg`` for ``ctx`` (``names`` and ``baseline`` as there);
    ``objective`` maps the actor-critic and a batch of rows to named terms, ``loss/total`` the
    scalar to minimise. Its state is the rollout learner's: the gradient step and the reward scaler.
    """

    def __init__(self, cfg, ctx: BuildContext, *, objective: Objective, names: tuple[str, ...], baseline: bool = True):
        self.objective = objective
        self.rollout = RolloutLearner(cfg, ctx, names=names, baseline=baseline)
        self.agent, self.step = self.rollout.agent, self.rollout.step
        self.act, self.ingest_and_sample = self.rollout.act, self.rollout.ingest_and_sample

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """The objective's terms of a batch of rows, ``loss/total`` the scalar to minimise."""
        return self.objective(self.agent, batch)

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Advantages, one gradient step on the rows of ``batch`` the loss counts, then the statistics
        update; returns the terms and the learning rate used."""
        lr = self.step.lr
        flat = self.rollout.rows(batch, timer)
        with timer.phase("update.forward"):
            terms = self.loss(flat)
        # Across ranks each counted row weighs the same, whatever each rank's count of them.
        self.step(terms["loss/total"], timer, rows=flat[keys.VALID].sum())
        self.rollout.finish(batch)
        return {name: float(value.detach()) for name, value in terms.items()} | {"optim/lr": lr}

    def state_dict(self, *, replay: bool = True) -> dict:
        return self.rollout.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.rollout.load_state_dict(state)
