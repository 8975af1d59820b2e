"""What every algorithm's ``build`` receives besides its own config: one frozen build context."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from gymnasium import spaces

from rlcli.learning.exploration import ActionBounds
from rlcli.learning.optim import GradientStep
from rlcli.models.encoders import Encoder, build_encoder
from rlcli.models.normalization import ObservationNormalizer

if TYPE_CHECKING:
    from rlcli.config.schema import (
        CollectorConfig,
        EnvConfig,
        NetworkConfig,
        OptimConfig,
    )
    from rlcli.datasets import Dataset
    from rlcli.envs.teams import TeamLayout
    from rlcli.runtime.distributed import Group


@dataclass(frozen=True)
class BuildContext:
    """The run's sections and runtime objects an algorithm is built from.

    ``build_run`` makes one per rank (``env`` and ``collector`` are that rank's share);
    evaluation makes one from a run's config to build the agent alone.
    """

    observation_space: spaces.Space
    action_space: spaces.Space
    network: NetworkConfig
    env: EnvConfig
    collector: CollectorConfig
    optim: OptimConfig
    device: torch.device
    seed: int
    """Seeds the algorithm's own generators (replay samples, minibatch order, target noise)."""
    run_folder: Callable[[], Path] | None = None
    """The run folder, made when first called (memmap replay storage); None when nothing is kept."""
    source: str | None = None
    """Names the config in errors."""
    group: Group | None = None
    """The ranks of a data-parallel run; None in one process."""
    iterations: int | None = None
    """Training iterations, over which ``[optim]``'s schedule runs (default: the collector's)."""
    dataset: Dataset | None = None
    """An offline run's dataset, which its replay samples (None online)."""
    dataset_device: torch.device | None = None
    """Where the dataset's tensors live (``[data] device``)."""
    action_masks: bool = False
    """The envs give action masks that the algorithm applies (:func:`rlcli.envs.masks.find_masks`): batches
    carry ``action_mask`` and ``next_action_mask``."""

    team: TeamLayout | None = None
    """A team env's groups and state (IPPO, MAPPO); None for a single-agent env."""
    agents_apart: int = 1
    """A team group's agents that each have their own weights (``[algo] share_params = false``): its networks are
    ensembles of this many members and its minibatches take whole frames of that many rows; 1 otherwise."""
    critic_space: spaces.Box | None = None
    """A centralized critic's input (MAPPO's: the env's state or the group's observations), which the value
    reads instead of the observation: observations are then TensorDicts of ``observation`` and ``critic``."""

    def encoder(self) -> Encoder:
        """A new encoder of the observation space as ``[network] encoder`` asks (its ``out_features``
        sizes the MLP after it); each call builds one with weights of its own."""
        return build_encoder(self.observation_space, self.network)

    @property
    def act_dim(self) -> int:
        """Outputs of an actor of a Box action space (a MultiBinary one's too: one per bit)."""
        shape = self.action_space.shape
        if shape is None:
            # Only composite spaces (Dict, Tuple) have no shape, and check_spaces refuses them as actions.
            raise TypeError(f"action space {self.action_space} has no shape")
        return int(np.prod(shape))

    @property
    def box_actions(self) -> spaces.Box:
        """The action space of an algorithm that takes Box actions alone, as the Box it is (``check_spaces``
        refuses any other before the algorithm is built)."""
        space = self.action_space
        if not isinstance(space, spaces.Box):
            raise TypeError(f"a Box action space was expected, not {space}")
        return space

    @property
    def discrete_actions(self) -> spaces.Discrete:
        """The action space of an algorithm that takes Discrete actions alone (a Q-learner's), as the Discrete
        it is (``check_spaces`` refuses any other before the algorithm is built)."""
        space = self.action_space
        if not isinstance(space, spaces.Discrete):
            raise TypeError(f"a Discrete action space was expected, not {space}")
        return space

    def observation_normalizer(self) -> ObservationNormalizer:
        """Running observation statistics as ``[env]`` asks, pooled over the ranks (a Box's only: Discrete
        and Dict observations are never normalized, which the config check says)."""
        space = self.observation_space
        box = isinstance(space, spaces.Box)
        return ObservationNormalizer(
            space.shape if isinstance(space, spaces.Box) else (),
            enabled=self.env.normalize_observation and box,
            clip=self.env.clip_observation,
            group=self.group,
        )

    def action_bounds(self) -> ActionBounds:
        """The Box action space's bounds on the device."""
        return ActionBounds(self.action_space, self.device)

    def noise_generator(self) -> torch.Generator:
        """A generator on the device for an algorithm's own draws in its updates (target noise, actor samples,
        critic subsets), seeded with ``seed + 1``: apart from its replay's, which ``seed`` seeds."""
        generator = torch.Generator(device=self.device)
        generator.manual_seed(self.seed + 1)
        return generator

    def gradient_step(
        self,
        params: Iterable[torch.nn.Parameter],
        *,
        lr: float | None = None,
        networks: Sequence[Sequence[torch.nn.Parameter]] | None = None,
    ) -> GradientStep:
        """``[optim]`` over ``params``, its schedule over the run's iterations; ``lr`` replaces ``optim.lr``;
        ``networks`` split ``params`` into what ``[optim] clip_scope = "networks"`` clips apart."""
        optim = self.optim if lr is None else self.optim.model_copy(update={"lr": lr})
        iterations = self.collector.iterations if self.iterations is None else self.iterations
        return GradientStep(optim, params, iterations, self.group, networks=networks)
