"""What an algorithm can take, declared once on its config model as ``CAPABILITIES``: its spaces, action
masks, memory, sampling and data sources, with the names the docs give it.

Everything that lists algorithms by what they can do reads these declarations: the table of
algorithms, ``rlcli validate``'s checks, the field descriptions, export's messages, the README's and
the guides' generated tables, and the space checks of ``rlcli.algos``. Spaces are named by their
gymnasium class names, so that reading a config never imports gymnasium or torch; ``rlcli.algos``
maps the names to the classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SpaceName = Literal["Box", "Discrete", "Dict", "MultiDiscrete", "MultiBinary"]
"""A gymnasium space class, by name. Action ``Box``, ``MultiDiscrete`` and ``MultiBinary`` spaces are 1-D."""

Source = Literal["collector", "dataset"]
"""Where an algorithm's data comes from: envs (online, the collector) or a dataset (offline)."""

OBSERVATIONS: tuple[SpaceName, ...] = ("Box", "Discrete", "Dict")
"""The observation spaces every encoder reads (a vector or image Box, one-hot Discrete, a Dict of those)."""

POLICY_HEAD = (
    "the policy head: the logits of illegal actions are set to -1e8 (finite, so that the entropy's "
    "`0 * logit` stays 0; sb3-contrib's value) before sampling, log-probabilities, the entropy (over the "
    "legal actions only) and the evaluation's argmax. The mask an action was drawn under is stored with "
    "the rollout (`action_mask`) and used again in the update."
)
"""Where a policy-gradient algorithm applies masks (``rlcli.models.heads``), as the masks guide says it."""

Q_ARGMAX = (
    "the argmax when acting and evaluating, epsilon's random action (uniform over the legal ones), and the "
    "target: the max (or, for double DQN, the online argmax) over the next state's legal actions, whose "
    "mask is stored in replay (`next_action_mask`; the n-th next state's with n-step returns)."
)
"""Where a Q-learner applies masks (``rlcli.learning.exploration`` and its target), as the masks guide says it."""


@dataclass(frozen=True)
class Masks:
    """The invalid-action masks an algorithm applies."""

    actions: tuple[SpaceName, ...]
    """The action spaces whose masks it applies."""
    where: str
    """Where it applies them, one Markdown sentence for the masks guide's table (shared texts above)."""


@dataclass(frozen=True)
class Variant:
    """A variant of an algorithm that is a config field, not a module (REDQ, TD3+BC): a row of its own
    in the README's table, holding the presets that set ``field``."""

    title: str
    field: str
    """The field that makes a config this variant: a preset is one where the field is not its default."""
    paper: str
    sources: tuple[Source, ...] | None = None
    """Where the variant learns from, where it differs from its algorithm's."""


@dataclass(frozen=True)
class Capabilities:
    """An algorithm's facts, declared once on its config model (``CAPABILITIES``)."""

    title: str
    """The algorithm's name in prose and tables ("QR-DQN")."""
    paper: str
    """The citation of the README's table, Markdown links."""
    actions: tuple[SpaceName, ...]
    """The action spaces it takes."""
    samples: str
    """When its policy draws from a distribution (what ``rlcli export --stochastic`` writes), completing
    "<algorithms> ...": "(their Gaussian)", "with epsilon_end > 0"."""
    observations: tuple[SpaceName, ...] = OBSERVATIONS
    sources: tuple[Source, ...] = ("collector",)
    masks: Masks | None = None
    memory: bool = False
    """Whether its policy may have a memory core (``[network] memory``); its config then has
    ``sequence(steps)``, the steps per sequence of its recurrent update."""
    teams: bool = False
    """Whether it trains teams (PettingZoo and VMAS envs, groups of agents) rather than one agent per env."""
    fields_note: str = ""
    """Variants that are plain fields, named in the README's table after the title."""
    variants: tuple[Variant, ...] = ()


def words(items: list[str] | tuple[str, ...]) -> str:
    """``items`` as prose: "a", "a and b", "a, b and c"."""
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items)
