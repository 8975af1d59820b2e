"""What the team algorithms (IPPO, MAPPO) share: one on-policy learner per group, each the single-agent one
over the group's ``N * agents`` columns, and the inputs its networks read.

A group's rollout is the team batch's ``[T, N, agents]`` sub-TensorDict seen as ``[T, N * agents]``: each
agent is a column, its ``valid`` its ``alive`` mask, so advantages (no trace crosses an agent's end: its
last live step is terminated or truncated, and its absent rows are invalid), reward scaling, observation
statistics and the loss are the single-agent ones, and rows after an agent left count in none of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from gymnasium import spaces
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.carry import Carry
from rlcli.collectors.teams import NEXT_STATE
from rlcli.envs.teams.stepping import ALIVE, STATE

if TYPE_CHECKING:
    from rlcli.algos.context import BuildContext
    from rlcli.envs.teams import GroupSpec, TeamLayout
    from rlcli.timing import Timer

CRITIC_INPUTS = ("own", "state", "group", "all_groups")
"""What a group's critic reads: its agent's own observation (IPPO), the env's state, the group's observations,
or every group's (MAPPO)."""


def resolve_critic(choice: str, layout: TeamLayout) -> str:
    """``[algo] critic_input`` made concrete for ``layout``: ``auto`` is ``state`` where the env has one, else
    ``group``."""
    if choice == "auto":
        return "state" if layout.state_space is not None else "group"
    return choice


class Inputs:
    """What a group's networks read, made from the team batch: the agent's observation (with its one-hot index
    in the group when ``agent_index``) and, for a centralized critic, the critic's input."""

    def __init__(self, layout: TeamLayout, name: str, *, critic: str, agent_index: bool):
        self.layout, self.name, self.critic, self.agent_index = layout, name, critic, agent_index
        self.spec = layout.group(name)
        self.index = torch.eye(self.spec.size) if agent_index or critic != "own" else None

    def observation_space(self) -> spaces.Box:
        """One agent's policy input: its observation, then its one-hot index when asked."""
        space = self.spec.observation_space
        assert isinstance(space, spaces.Box), "team envs give Box observations (checked when made)"
        return _with_index(space, self.spec.size) if self.agent_index else space

    def critic_space(self) -> spaces.Box | None:
        """The centralized critic's input (None: the critic reads the observation), then the one-hot index."""
        if self.critic == "own":
            return None
        if self.critic == "state":
            assert self.layout.state_space is not None, "critic_input = state is refused without a state"
            width = _width(self.layout.state_space)
        else:
            groups = self.layout.groups if self.critic == "all_groups" else (self.spec,)
            width = sum(g.size * _width(g.observation_space) for g in groups)
        return _with_index(spaces.Box(-np.inf, np.inf, (width,), np.float32), self.spec.size)

    def __call__(self, data: TensorDict, *, following: bool = False, policy: bool = False) -> torch.Tensor | TensorDict:
        """The group's inputs ``[*B, agents, ...]`` from team data ``data`` (``[*B]``): of ``observation``, or with
        ``following`` of ``next_observation`` (and ``next_state``); with ``policy`` only what the policy reads
        (evaluation, which never needs the critic's)."""
        key = keys.NEXT_OBSERVATION if following else keys.OBSERVATION
        own = data.get(self.name).get(key)
        lead = own.shape[:-2]
        index = None
        if self.index is not None:
            index = self.index.to(own.device).expand(*lead, self.spec.size, self.spec.size)
        observation = own
        if self.agent_index:
            assert index is not None, "made in __init__ whenever agent_index is on"
            observation = torch.cat([own.float(), index], -1)
        if self.critic == "own":
            return observation
        if policy:
            return TensorDict({"observation": observation}, batch_size=[*lead, self.spec.size])
        # A centralized critic always has the index (made in __init__).
        assert index is not None
        if self.critic == "state":
            shared = data.get(NEXT_STATE if following else STATE).flatten(len(lead))
        else:
            groups = self.layout.names if self.critic == "all_groups" else (self.name,)
            shared = torch.cat([data.get(g).get(key).flatten(len(lead)).float() for g in groups], -1)
        critic = torch.cat([shared.unsqueeze(-2).expand(*lead, self.spec.size, shared.shape[-1]), index], -1)
        batch = [*lead, self.spec.size]
        return TensorDict({"observation": observation, "critic": critic}, batch_size=batch)


def _width(space: spaces.Space) -> int:
    """The features of a flat vector of ``space``'s values."""
    return int(np.prod(space.shape or ()))


def _with_index(space: spaces.Box, agents: int) -> spaces.Box:
    low = np.concatenate([space.low.reshape(-1), np.zeros(agents)]).astype(np.float32)
    high = np.concatenate([space.high.reshape(-1), np.ones(agents)]).astype(np.float32)
    return spaces.Box(low, high, dtype=np.float32)


def group_context(ctx: BuildContext, spec: GroupSpec, inputs: Inputs, *, shared: bool = True) -> BuildContext:
    """The build context of one group's learner: its spaces, the rollout's ``N * agents`` columns, and unless
    ``shared`` weights of each agent's own."""
    env = ctx.env.model_copy(update={"num_envs": ctx.env.num_envs * spec.size})
    collector = ctx.collector.model_copy(update={"frames_per_batch": ctx.collector.frames_per_batch * spec.size})
    return dataclasses.replace(
        ctx,
        observation_space=inputs.observation_space(),
        action_space=spec.action_space,
        env=env,
        collector=collector,
        critic_space=inputs.critic_space(),
        action_masks=spec.action_mask,
        agents_apart=1 if shared else spec.size,
        team=None,
    )


GROUP_KEYS = (
    keys.REWARD,
    keys.TERMINATED,
    keys.TRUNCATED,
    keys.VALID,
    keys.ACTION,
    keys.LOG_PROB,
    keys.VALUE,
    keys.ACTION_MASK,
    keys.MEMORY,
    keys.FIRST,
)
"""What a group's rollout takes of the team batch beside the inputs its networks read (``memory`` and ``first``
where the group's policy has memory)."""


def columns(data: TensorDict | torch.Tensor, lead: int) -> Any:
    """``data`` with its ``lead`` batch dimensions and the agents' merged into one: ``[*B, agents, ...]`` ->
    ``[*B[:-1], B[-1] * agents, ...]``."""
    return data.flatten(lead - 1, lead)


class TeamAgent(nn.Module):
    """Every group's actor-critic as one module (one state_dict), and the team's actions from team observations."""

    samples = True
    memory = None

    def __init__(self, agents: dict[str, Any], inputs: dict[str, Inputs]):
        super().__init__()
        self.groups = nn.ModuleDict(agents)
        # The same modules, typed as the actor-critics they are (a ModuleDict's items are plain Modules).
        self.agents: dict[str, Any] = dict(agents)
        self.inputs = inputs

    @torch.no_grad()
    def actions(
        self,
        observation: TensorDict,
        *,
        deterministic: bool,
        generator: torch.Generator,
        carry: TeamCarry | None = None,
    ) -> TensorDict:
        """Each group's actions (``[N, agents, *action]``) for team observations ``observation`` ([N]), under
        ``carry``'s memory (a policy with memory needs one: :meth:`carry`)."""
        n = observation.batch_size[0]
        out = {}
        for name, agent in self.agents.items():
            inputs = self.inputs[name](observation, policy=True)
            size = self.inputs[name].spec.size
            group = _group_carry(carry, name, observation, n * size)
            action = agent.actions(columns(inputs, 1), deterministic=deterministic, generator=generator, carry=group)
            out[name] = TensorDict({keys.ACTION: action.reshape(n, size, *action.shape[1:])}, batch_size=[n, size])
        return TensorDict(out, batch_size=[n])

    def carry(self, n: int, device: torch.device) -> TeamCarry:
        """The carry of ``n`` fresh team envs: one :class:`~rlcli.carry.Carry` per group over its agents."""
        return TeamCarry({name: (agent, self.inputs[name].spec.size) for name, agent in self.agents.items()}, n, device)


class TeamCarry:
    """What a team's policies carry from one step of ``n`` team envs to the next: a
    :class:`~rlcli.carry.Carry` per group over its ``n * agents`` columns (memory, episode starts, masks).

    An agent's memory starts afresh where its env's episode starts and where the agent joins (alive now, not
    at the step before); while it is absent its rows count in nothing."""

    def __init__(self, groups: dict[str, tuple[Any, int]], n: int, device: torch.device):
        self.n = n
        self.groups = {name: Carry.of(agent, n * size, device) for name, (agent, size) in groups.items()}
        self.alive = {name: torch.zeros(n, size, dtype=torch.bool, device=device) for name, (_, size) in groups.items()}

    def episode_starts(self, observation: TensorDict, envs: torch.Tensor) -> None:
        """Say where the next step starts an agent's episode: ``envs`` ([n] bool) whose episode starts, and the
        agents of ``observation`` alive now that were not at the step before."""
        for name, carry in self.groups.items():
            alive = observation.get(name).get(ALIVE)
            carry.episode_starts((envs[:, None] | (alive & ~self.alive[name])).flatten())
            self.alive[name] = alive.clone()

    def state_dict(self) -> dict:
        return {name: carry.state_dict() | {"alive": self.alive[name]} for name, carry in self.groups.items()}

    def load_state_dict(self, state: dict) -> None:
        for name, carry in self.groups.items():
            carry.load_state_dict(state[name])
            self.alive[name] = state[name]["alive"].to(carry.device)


def _group_carry(carry: TeamCarry | None, name: str, observation: TensorDict, count: int) -> Carry | None:
    """Group ``name``'s carry for this step, its masks set from ``observation``: the team carry's, or without one
    a carry of the masks alone (None when the group has none)."""
    group = observation.get(name)
    mask = group.get(keys.ACTION_MASK).flatten(0, 1) if keys.ACTION_MASK in group.keys() else None
    if carry is None:
        if mask is None:
            return None
        fresh = Carry(count, mask.device)
        fresh.mask = mask
        return fresh
    own = carry.groups[name]
    own.mask = mask
    return own


class TeamLearner:
    """The algorithm object of a team algorithm: ``learner(cfg, ctx)`` (PPO's) built per group on the group's
    context, acting for every group at once and learning group by group. Its row terms are each group's,
    named ``<term>/<group>``."""

    def __init__(self, cfg, ctx: BuildContext, learner: Callable[[Any, BuildContext], Any], *, critic: str):
        layout = ctx.team
        assert layout is not None, "a team algorithm is built for a team env"
        critic = resolve_critic(critic, layout)
        self.layout = layout
        self.inputs = {
            spec.name: Inputs(layout, spec.name, critic=critic, agent_index=cfg.agent_index) for spec in layout.groups
        }
        self.learners = {
            spec.name: learner(cfg, group_context(ctx, spec, self.inputs[spec.name], shared=cfg.share_params))
            for spec in layout.groups
        }
        self.agent = TeamAgent({name: learner.agent for name, learner in self.learners.items()}, self.inputs)

    def act(self, observation: TensorDict, generator: torch.Generator, carry: TeamCarry | None = None) -> TensorDict:
        """Each group's ``action``, ``log_prob`` and ``value`` (``[N, agents]``) for team observations ([N]),
        and with memory the ``memory`` and ``first`` each agent's step started from."""
        n = observation.batch_size[0]
        out = {}
        for name, learner in self.learners.items():
            size = self.inputs[name].spec.size
            inputs = columns(self.inputs[name](observation), 1)
            step = learner.act(inputs, generator, _group_carry(carry, name, observation, n * size))
            out[name] = step.reshape(n, size)
        return TensorDict(out, batch_size=[n])

    def carry(self, n: int, device: torch.device) -> TeamCarry:
        """The carry of ``n`` fresh team envs (:meth:`TeamAgent.carry`), which every ``act`` call takes."""
        return self.agent.carry(n, device)

    def rollout(self, batch: TensorDict, name: str) -> TensorDict:
        """Group ``name``'s rollout as ``[T, N * agents]`` columns: its inputs as the ``observation`` and
        ``next_observation`` its learner reads, and its rewards, flags, actions and what acting stored."""
        inputs = self.inputs[name]
        group = batch.get(name)
        data = {key: columns(group.get(key), 2) for key in GROUP_KEYS if key in group.keys()}
        data[keys.OBSERVATION] = columns(inputs(batch), 2)
        data[keys.NEXT_OBSERVATION] = columns(inputs(batch, following=True), 2)
        steps, envs, size = group.batch_size
        return TensorDict(data, batch_size=[steps, envs * size])

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Each group's learner on its rollout; returns every group's terms as ``<term>/<group>``."""
        terms: dict[str, float] = {}
        for name, learner in self.learners.items():
            for term, value in learner.learn(self.rollout(batch, name), timer).items():
                terms[f"{term}/{name}"] = value
        return terms

    def ingest_and_sample(self, batch: TensorDict, size: int, generator: torch.Generator) -> TensorDict:
        """Each group's minibatch of ``size`` rows of its rollout of ``batch``, as its learner draws one, under
        the group's name."""
        return TensorDict(
            {
                name: learner.ingest_and_sample(self.rollout(batch, name), size, generator)
                for name, learner in self.learners.items()
            },
            batch_size=[],
        )

    def loss(self, minibatch: TensorDict) -> dict[str, torch.Tensor]:
        """Each group's loss terms of its part of ``minibatch`` (:meth:`ingest_and_sample`), as ``<term>/<group>``,
        and ``loss/total``, the sum of the groups' totals (their weights are apart: the sum's gradient is each
        group's own)."""
        terms: dict[str, torch.Tensor] = {}
        totals = []
        for name, learner in self.learners.items():
            group = learner.loss(minibatch.get(name))
            totals.append(group["loss/total"])
            terms |= {f"{term}/{name}": value for term, value in group.items()}
        terms["loss/total"] = torch.stack(totals).sum()
        return terms

    def state_dict(self, *, replay: bool = True) -> dict:
        return {name: learner.state_dict() for name, learner in self.learners.items()}

    def load_state_dict(self, state: dict) -> None:
        for name, learner in self.learners.items():
            learner.load_state_dict(state[name])


def team_metrics(metrics: tuple[str, ...], groups: tuple[str, ...]) -> tuple[str, ...]:
    """The row keys of a team algorithm whose per-group learner reports ``metrics``: each as ``<term>/<group>``."""
    return tuple(f"{metric}/{name}" for name in groups for metric in metrics)
