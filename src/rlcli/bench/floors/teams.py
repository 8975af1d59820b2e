"""Bare floors of the team family: MAPPO's loss written plainly in torch, and VMAS stepped raw (the
simulator's own ``step`` with actions drawn beforehand), to price what rlcli's team learner and team
collector add (``loss/mappo.slowdown_vs_bare_torch``, ``collector/teams.share_of_raw_vmas``)."""

from __future__ import annotations

import importlib
import math
from typing import Any

import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.learning.teams import TeamCarry

RAW_STEPS = 8
"""Steps of one call of :class:`RawVmas` (and of the team collector case it is set beside)."""


def bare_mappo_loss(agent, batch: TensorDict, clip_epsilon: float, value_coef: float, entropy_coef: float):
    """One group's MAPPO loss in bare torch: a diagonal Gaussian policy on the agent's input, the centralized
    critic on its own input, means over the rows of live agents; advantages as stored (the
    team presets do not normalize them)."""
    obs, critic = batch[keys.INPUT]["observation"], batch[keys.INPUT]["critic"]
    action, old_log_prob = batch[keys.ACTION], batch[keys.LOG_PROB]
    advantage, target = batch[keys.ADVANTAGE], batch[keys.VALUE_TARGET]
    # A minibatch holds live agents' rows only, unless it keeps the ``valid`` mask of a padded one.
    valid = batch[keys.VALID].float() if keys.VALID in batch.keys() else torch.ones_like(advantage)
    count = valid.sum().clamp(min=1)
    mean = agent.policy.net(obs)
    log_std = agent.policy.log_std.expand_as(mean)
    log_prob = (-((action - mean) ** 2) / (2 * (2 * log_std).exp()) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
    entropy = (0.5 + 0.5 * math.log(2 * math.pi) + log_std).sum(-1)
    log_ratio = log_prob - old_log_prob
    ratio = log_ratio.exp()
    surrogate = torch.min(ratio * advantage, ratio.clamp(1 - clip_epsilon, 1 + clip_epsilon) * advantage)
    value = agent.value.net(critic).squeeze(-1)
    value_loss = ((value - target).square() * valid).sum() / count
    policy = -(surrogate * valid).sum() / count
    return policy + value_coef * value_loss - entropy_coef * (entropy * valid).sum() / count


class RawVmas:
    """A VMAS scenario made and stepped as its own users do: ``vmas.make_env`` with the same settings as rlcli's
    adapter (``terminated_truncated``, ``clamp_actions``), ``RAW_STEPS`` steps a call of uniform random
    actions drawn beforehand, envs whose episode ended reset as the adapter resets them (all at once when all
    ended, else one ``reset_at`` each). Made when its case is opened, so that only the timed case holds it."""

    def __init__(self, scenario: str, num_envs: int, kwargs: dict[str, Any], *, max_steps: int | None, seed: int):
        self.scenario, self.num_envs, self.kwargs = scenario, num_envs, dict(kwargs)
        self.max_steps, self.seed = max_steps, seed
        self.env: Any = None
        self.actions: list[list[torch.Tensor]] = []

    def open(self) -> None:
        self.env = self.make()
        # Reset from the seed, as rlcli's collector resets its envs: both cases start from the same states.
        self.env.reset(seed=self.seed)
        self.actions = draws(self.env, self.num_envs, self.seed)

    def make(self) -> Any:
        """The scenario's VMAS env, made as rlcli's adapter makes it."""
        vmas = importlib.import_module("vmas")
        kwargs = dict(self.kwargs)
        return vmas.make_env(
            self.scenario,
            num_envs=self.num_envs,
            device="cpu",
            continuous_actions=kwargs.pop("continuous_actions", True),
            max_steps=kwargs.pop("max_steps", self.max_steps),
            seed=self.seed,
            terminated_truncated=True,
            clamp_actions=True,
            **kwargs,
        )

    def run(self) -> None:
        env = self.env
        for action in self.actions:
            _, _, terminated, truncated, _ = env.step(action)
            done = terminated | truncated
            if done.all():
                env.reset()
            elif done.any():
                for i in done.nonzero().flatten().tolist():
                    env.reset_at(i)

    def close(self) -> None:
        self.env = None


def draws(env: Any, n: int, seed: int) -> list[list[torch.Tensor]]:
    """``RAW_STEPS`` steps of uniform random actions for every agent of VMAS env ``env`` (``n`` envs), drawn from
    ``seed``: the same draws for the raw case and the team collector's case."""
    generator = torch.Generator().manual_seed(seed)
    return [[_uniform(space, n, generator) for space in env.action_space.spaces] for _ in range(RAW_STEPS)]


class ReplayedActions:
    """The acting of the team collector's case beside :class:`RawVmas`: the same random actions, step after step
    (each group's ``[N, agents, ...]`` from VMAS's per-agent draws), with zero log-probabilities and values, so
    that the case times the collector and the adapter, not a policy."""

    def __init__(self, team: Any, actions: list[list[torch.Tensor]]):
        self.team, self.actions, self.step = team, actions, 0

    def carry(self, n: int, device: torch.device) -> TeamCarry:
        """A carry of no group: random actions have no memory."""
        return TeamCarry({}, n, device)

    def act(self, observation: TensorDict, generator: torch.Generator, carry: Any = None) -> TensorDict:
        drawn = self.actions[self.step % len(self.actions)]
        self.step += 1
        n = observation.batch_size[0]
        out = {}
        for name, index in self.team.index.items():
            action = torch.stack([drawn[i] for i in index], dim=1)
            if self.team.discrete[name]:
                action = action.squeeze(-1)
            zeros = torch.zeros(n, len(index))
            out[name] = TensorDict(
                {keys.ACTION: action, keys.LOG_PROB: zeros, keys.VALUE: zeros}, batch_size=[n, len(index)]
            )
        return TensorDict(out, batch_size=[n])


def _uniform(space: Any, n: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` uniform draws of a VMAS agent's action space (Box, or Discrete as a column of indices)."""
    if type(space).__name__ == "Discrete":
        return torch.randint(int(space.n), (n, 1), generator=generator)
    low, high = torch.as_tensor(space.low), torch.as_tensor(space.high)
    return low + (high - low) * torch.rand((n, *low.shape), generator=generator)
