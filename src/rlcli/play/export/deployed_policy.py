"""The module an exported file is traced from: a run's agent restored (or a config's untrained one),
wrapped as :class:`DeployedPolicy` to map raw observations to env actions, with example inputs to
trace it on and the metadata the file carries (the inputs and outputs are described in
:mod:`rlcli.play.export`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch
from gymnasium import spaces
from torch import nn

from rlcli import __version__
from rlcli.carry import Acts, Carry
from rlcli.config.errors import InputError
from rlcli.config.load import load_config
from rlcli.envs import describe_space
from rlcli.envs.masks import mask_size
from rlcli.envs.teams import team_kind
from rlcli.observations import leaves
from rlcli.play.playback import built_agent, restored

EXAMPLE_BATCH = 2
"""Rows of the example observations a dynamic-batch export traces with (torch.export specializes sizes 0 and 1)."""


class DeployedPolicy(nn.Module):
    """``agent``'s evaluation actions for raw observations: :meth:`Agent.actions` in its deterministic mode
    (or, ``stochastic``, drawn from the policy with torch's default generator), then the clipping to the Box
    bounds that the evaluator and collector apply. See :mod:`rlcli.play.export` for the inputs and outputs."""

    # None when the action space is unbounded or discrete.
    low: torch.Tensor | None
    high: torch.Tensor | None

    def __init__(
        self,
        agent: nn.Module,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        *,
        masked: bool,
        stochastic: bool = False,
    ):
        super().__init__()
        assert isinstance(agent, Acts), "an agent has actions"
        self.agent = agent
        self.stochastic = stochastic
        self.generator: torch.Generator | None = None
        """Where a stochastic module draws from in eager calls (tests compare a file's draws with the
        generator path that evaluation takes); None, torch's default generator, is what a file holds."""
        self.keys = list(observation_space.spaces) if isinstance(observation_space, spaces.Dict) else None
        self.masked = masked
        self.remembers = getattr(agent, "memory", None) is not None
        # A team group's file whose policy reads the agent's index in its group (rlcli.play.export.teams).
        self.indexed = bool(getattr(agent, "indexed", False))
        box = action_space if isinstance(action_space, spaces.Box) else None
        self.register_buffer("low", None if box is None else torch.as_tensor(box.low, dtype=torch.float32))
        self.register_buffer("high", None if box is None else torch.as_tensor(box.high, dtype=torch.float32))

    @property
    def input_names(self) -> list[str]:
        names = ["obs"] if self.keys is None else [f"obs.{key}" for key in self.keys]
        names += ["agent"] if self.indexed else []
        return names + (["action_mask"] if self.masked else []) + (["memory", "first"] if self.remembers else [])

    @property
    def output_names(self) -> list[str]:
        return ["action"] + (["next_memory"] if self.remembers else [])

    def forward(self, *inputs: torch.Tensor):
        count = 1 if self.keys is None else len(self.keys)
        observation, rest = inputs[:count], list(inputs[count:])
        if self.keys is None:
            obs = observation[0]
        else:
            from tensordict import TensorDict

            obs = TensorDict(dict(zip(self.keys, observation)), batch_size=[observation[0].shape[0]])
        carry = Carry(observation[0].shape[0], observation[0].device)
        index = {"agent": rest.pop(0)} if self.indexed else {}
        if self.masked:
            carry.mask = rest.pop(0)
        if self.remembers:
            carry.memory, carry.first = rest
        action = self.agent.actions(
            obs, deterministic=not self.stochastic, generator=self.generator, carry=carry, **index
        )
        if self.low is not None:
            action = torch.clamp(action, self.low, self.high)
        return (action, carry.memory) if self.remembers else action


def refuse_teams(cfg, what: str) -> None:
    """Raise an InputError for a team run, whose policies are one file per group
    (:func:`rlcli.play.export.export_team`)."""
    if team_kind(cfg.env.id) is not None:
        raise InputError(
            what,
            f"{cfg.env.id} is a team env ({cfg.algo.name}): its policies are exported one file per group, by "
            "rlcli export (or rlcli.play.export.export_team)",
        )


def deployed(
    folder: Path, weights: Path, *, stochastic: bool = False
) -> tuple[DeployedPolicy, tuple[torch.Tensor, ...], dict[str, Any]]:
    """The run's :class:`DeployedPolicy` on the CPU (weights from ``weights``; deterministic unless
    ``stochastic``), example inputs of :data:`EXAMPLE_BATCH` rows, and the file's metadata."""
    config_file = folder / "config.toml"
    cfg = load_config(config_file)
    refuse_teams(cfg, f"run folder {folder}")
    agent, observation_space, action_space, payload = restored(
        cfg, weights, torch.device("cpu"), render=False, source=str(config_file)
    )
    masked = _run_masks(folder) and mask_size(action_space) is not None
    module = DeployedPolicy(agent, observation_space, action_space, masked=masked, stochastic=stochastic).eval()
    examples = examples_for(module, observation_space, action_space)
    metadata = file_metadata(cfg, config_file, weights, payload, module, examples, observation_space, action_space)
    return module, examples, metadata


def file_metadata(
    cfg,
    config_file: Path,
    weights: Path,
    payload: dict,
    module: DeployedPolicy,
    examples: tuple,
    observation_space,
    action_space,
) -> dict[str, Any]:
    """The metadata an exported file carries (see :mod:`rlcli.play.export`) for ``module``, traced on ``examples``."""
    metadata = {
        "env": cfg.env.id,
        "algo": cfg.algo.name,
        "observation_space": describe_space(observation_space),
        "action_space": describe_space(action_space),
        "inputs": module.input_names,
        "outputs": module.output_names,
        "stochastic": module.stochastic,
        "rlcli": __version__,
        "torch": torch.__version__,
        "config_sha256": hashlib.sha256(config_file.read_bytes()).hexdigest(),
        "frames": int(payload.get("frames", 0)),
        "checkpoint": weights.name,
    }
    if module.remembers:
        metadata["memory_shape"] = list(examples[-2].shape[1:])
    return metadata


def deployed_untrained(cfg, *, source: str, masked: bool = False, stochastic: bool = False):
    """(``cfg``'s untrained agent, as ``build_run`` builds it, as a :class:`DeployedPolicy` on the CPU, the
    env's observation space, its action space): what the bench and the tests export without a run."""
    refuse_teams(cfg, source)
    agent, observation_space, action_space = built_agent(cfg, torch.device("cpu"), source=source)
    module = DeployedPolicy(agent.eval(), observation_space, action_space, masked=masked, stochastic=stochastic)
    module = module.eval()
    return module, observation_space, action_space


def examples_for(module: DeployedPolicy, observation_space, action_space) -> tuple[torch.Tensor, ...]:
    """Example inputs of :data:`EXAMPLE_BATCH` rows: observations sampled from the space, every action
    allowed, fresh memory."""
    found = leaves(observation_space)
    subspaces = observation_space.spaces if module.keys is not None else {None: observation_space}
    pairs = found if isinstance(found, dict) else {None: found}
    examples = []
    for name, (shape, dtype) in pairs.items():
        sample = [torch.as_tensor(subspaces[name].sample()) for _ in range(EXAMPLE_BATCH)]
        examples.append(torch.stack(sample).to(dtype).reshape(EXAMPLE_BATCH, *shape))
    if module.indexed:
        examples.append(torch.zeros(EXAMPLE_BATCH, dtype=torch.int64))
    if module.masked:
        size = mask_size(action_space)
        # A run acts under masks only for actions that take them (rlcli.algos.uses_masks).
        assert size is not None
        examples.append(torch.ones(EXAMPLE_BATCH, size, dtype=torch.bool))
    if module.remembers:
        carry = Carry.of(module.agent, EXAMPLE_BATCH, torch.device("cpu"))
        # The carry of an agent with memory (remembers) holds its state and episode starts.
        assert carry.memory is not None and carry.first is not None
        examples += [carry.memory, carry.first]
    return tuple(examples)


def _run_masks(folder: Path) -> bool:
    """Whether the run acted under action masks (``run.json``'s resolved ``action_mask``)."""
    try:
        return json.loads((folder / "run.json").read_text(encoding="utf-8")).get("action_mask") is not None
    except (OSError, ValueError):
        return False


def dynamic_shapes(examples: tuple[torch.Tensor, ...], dynamic: bool):
    """``torch.export``'s ``dynamic_shapes`` for ``examples``: each input's first dimension free where
    ``dynamic``, else None (every size fixed by the examples)."""
    if not dynamic:
        return None
    rows = torch.export.Dim("batch")
    # One entry, for forward's *inputs: a tuple with each input's batch dimension.
    return (tuple({0: rows} for _ in examples),)
