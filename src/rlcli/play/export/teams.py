"""Export of a team run: one file per group, one agent's raw observation in and its action out (one file per
agent for a group whose agents have their own weights, ``share_params = false``).

A group's file takes what a single agent's file takes (:mod:`rlcli.play.export`): ``obs`` (one agent's
observation, [B, *obs]), ``action_mask`` where the group acts under masks, ``memory`` and ``first`` for a
policy with memory; and, where the group's policy reads each agent's one-hot index (``[algo] agent_index``),
``agent`` ([B] int64, the agent's index in the group, as the metadata's ``agents`` lists them) after ``obs``.
Its metadata adds ``group``, ``agents`` and, for an agent's own file, ``agent``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from tensordict import TensorDict
from torch import nn

from rlcli.carry import Carry
from rlcli.config.load import load_config
from rlcli.envs.masks import mask_size
from rlcli.envs.teams import team_kind
from rlcli.learning.teams import TeamAgent
from rlcli.models.ensemble import AgentsApart
from rlcli.play.export.deployed_policy import DeployedPolicy, examples_for, file_metadata
from rlcli.play.playback import restored


class GroupPolicy(nn.Module):
    """One group's actor-critic as one of its agents acts with it: the agent's raw observation (and, where the
    policy reads it, its index in the group) to the inputs the policy reads, then the actor-critic's
    :meth:`actions` (normalization, mode or draw, masks and memory inside)."""

    def __init__(self, actor_critic: Any, *, size: int, agent_index: bool, keyed: bool, agent: int | None):
        super().__init__()
        # An ActorCritic (its actions, memory and samples), typed loosely as TeamAgent's groups are.
        self.actor_critic: Any = actor_critic
        self.memory = actor_critic.memory
        self.samples = actor_critic.samples
        self.size, self.agent_index, self.keyed, self.agent = size, agent_index, keyed, agent
        # The file's ``agent`` input: the index, unless the file is one agent's own.
        self.indexed = agent_index and agent is None

    def actions(
        self,
        observation: torch.Tensor,
        *,
        deterministic: bool,
        generator: torch.Generator | None,
        carry: Carry | None = None,
        agent: torch.Tensor | None = None,
    ) -> torch.Tensor:
        x = observation
        if self.agent_index:
            if agent is None:
                assert self.agent is not None, "an indexed group's file takes the agent's index"
                agent = torch.full(x.shape[:1], self.agent, dtype=torch.int64, device=x.device)
            x = torch.cat([x.float(), F.one_hot(agent, self.size).float()], -1)
        if self.keyed:
            x = TensorDict({"observation": x}, batch_size=x.shape[:1])
        return self.actor_critic.actions(x, deterministic=deterministic, generator=generator, carry=carry)


def member(actor_critic: nn.Module, agent: int) -> nn.Module:
    """A copy of ``actor_critic`` whose :class:`~rlcli.models.ensemble.AgentsApart` networks are ``agent``'s own
    MLP: what one agent of a group with unshared weights acts with."""
    own = copy.deepcopy(actor_critic)
    for name, module in list(own.named_modules()):
        if isinstance(module, AgentsApart):
            parent = own.get_submodule(name.rpartition(".")[0]) if "." in name else own
            setattr(parent, name.rpartition(".")[2], module.member(agent))
    return own


def group_policies(folder: Path, weights: Path, *, stochastic: bool) -> list[tuple[str, DeployedPolicy, tuple, dict]]:
    """(file stem, module on the CPU, example inputs, metadata) of each file of a team run: one per group, or per
    agent of a group whose agents have their own weights."""
    config_file = folder / "config.toml"
    cfg = load_config(config_file)
    assert team_kind(cfg.env.id) is not None, "a team run"
    restored_team = restored(cfg, weights, torch.device("cpu"), render=False, source=str(config_file))
    team, payload = restored_team.agent, restored_team.payload
    assert isinstance(team, TeamAgent), "a team run's agent"
    masks = cfg.env.action_mask != "none"
    shared = getattr(cfg.algo, "share_params", True)
    files = []
    for name, actor_critic in team.agents.items():
        inputs = team.inputs[name]
        spec = inputs.spec
        keyed = inputs.critic != "own"
        masked = masks and spec.action_mask and mask_size(spec.action_space) is not None
        choices: Sequence[int | None] = [None] if shared else range(spec.size)
        for agent in choices:
            own = actor_critic if agent is None else member(actor_critic, agent)
            policy = GroupPolicy(own, size=spec.size, agent_index=inputs.agent_index, keyed=keyed, agent=agent)
            module = DeployedPolicy(
                policy, spec.observation_space, spec.action_space, masked=masked, stochastic=stochastic
            ).eval()
            examples = examples_for(module, spec.observation_space, spec.action_space)
            metadata = file_metadata(
                cfg, config_file, weights, payload, module, examples, spec.observation_space, spec.action_space
            )
            metadata |= {"group": name, "agents": list(spec.agents)}
            stem = name
            if agent is not None:
                metadata["agent"] = spec.agents[agent]
                stem = f"{name}.{spec.agents[agent]}"
            files.append((stem, module, examples, metadata))
    return files
