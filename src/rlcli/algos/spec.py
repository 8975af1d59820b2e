"""The record each algorithm module ends with: what the trainer, evaluation, the bench and the tests take
from an algorithm, in one frozen, typed object."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_args

from gymnasium import spaces

if TYPE_CHECKING:
    from rlcli.algos.context import BuildContext
    from rlcli.config.algos import AlgoConfig
    from rlcli.config.algos.capabilities import Capabilities

SPACES: dict[str, type[spaces.Space]] = {
    "Box": spaces.Box,
    "Discrete": spaces.Discrete,
    "Dict": spaces.Dict,
    "MultiDiscrete": spaces.MultiDiscrete,
    "MultiBinary": spaces.MultiBinary,
}
"""The gymnasium class of each space name a config model's ``CAPABILITIES`` declares."""


@dataclass(frozen=True)
class AlgorithmSpec:
    """One algorithm: its config model and builders, and the row keys and phases its ``learn`` reports.

    What it can take (spaces, masks, memory, data sources) is declared once on the config model
    (``config.CAPABILITIES``); :attr:`supports` reads it as gymnasium classes.
    """

    config: type[AlgoConfig]
    """Its torch-free config model, under ``rlcli.config.algos``."""
    build: Callable[[Any, BuildContext], Any]
    """``build(cfg, ctx)``: the algorithm (an ``rlcli.algos.Algorithm``) for its config and one build context."""
    build_agent: Callable[[Any, BuildContext], Any]
    """``build_agent(cfg, ctx)``: its networks alone (an ``rlcli.algos.Agent``), without optimizer or
    buffer, for evaluation, playback and export."""
    phases: tuple[str, ...]
    """The timed sub-phases of its ``learn`` (``update.…``), fixed before the first row."""
    metrics: tuple[str, ...]
    """The row keys its ``learn`` reports (``loss/…``, ``stats/…``, ``optim/…``), fixed before the first row."""
    total: tuple[str, ...] = ()
    """The ``loss/total`` rule: the terms summed, in this order (``total_loss``), for the loss and the
    means ``learn`` reports; empty where its loss function weighs its terms itself (the on-policy
    algorithms, by their config's coefficients)."""

    @property
    def name(self) -> str:
        """Its ``[algo] name``."""
        return get_args(self.config.model_fields["name"].annotation)[0]

    @property
    def capabilities(self) -> Capabilities:
        """What it can take, as its config model declares it."""
        return self.config.CAPABILITIES

    @property
    def supports(self) -> dict[str, tuple[type[spaces.Space], ...]]:
        """The gymnasium space classes it takes, by role: ``observation``, ``action`` and, for an
        algorithm that applies masks, ``action_mask`` (the action spaces whose masks it applies)."""
        caps = self.capabilities
        roles = {"observation": caps.observations, "action": caps.actions}
        if caps.masks is not None:
            roles["action_mask"] = caps.masks.actions
        return {role: tuple(SPACES[name] for name in names) for role, names in roles.items()}
