"""The datasets rlcli makes itself (``rlcli datasets make``): a fixed table of recipes, by Minari id, and
the hint a missing dataset's error gives (the command that makes it, or ``minari download``).

Torch-free: the table is read by the missing-dataset errors, ``rlcli datasets list`` and the checks of
``rlcli datasets make`` before anything is imported to train; :mod:`rlcli.datasets.make` follows it."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from rlcli.config.errors import InputError


@dataclass(frozen=True)
class Training:
    """The training run that several recipes share: ``preset`` trained for ``frames`` frames with ``seed``,
    evaluated on ``eval_episodes`` episodes and checkpointed (replay buffer included) every ``every_frames``.

    ``medium_return`` picks the medium policy: that of the first checkpoint whose evaluation reached it.
    """

    preset: str
    frames: int
    every_frames: int
    eval_episodes: int
    medium_return: float

    def describe(self) -> str:
        return (
            f"{self.frames:,} frames of {self.preset}, evaluated on {self.eval_episodes} episodes and "
            f"checkpointed every {self.every_frames:,}"
        )


@dataclass(frozen=True)
class Recipe:
    """How one dataset is made.

    ``kind``: ``expert`` plays the training run's final policy; ``medium`` the policy of the checkpoint
    :attr:`Training.medium_return` picks; ``medium-replay`` writes that checkpoint's replay buffer;
    ``random`` plays uniformly random actions on ``env`` (no training). A played dataset takes the
    command's ``--steps`` steps, with Gaussian noise of ``noise`` half-ranges on the policy's actions.
    """

    id: str
    kind: Literal["expert", "medium", "medium-replay", "random"]
    env: str
    training: Training | None
    noise: float = 0.0

    def describe(self) -> str:
        """What the dataset holds, in a line (``rlcli datasets list``)."""
        noise = f"played with Gaussian noise of {self.noise} half-ranges"
        if self.training is None:
            return f"uniformly random actions on {self.env}"
        if self.kind == "expert":
            return f"the {self.training.preset} run's final policy, {noise}"
        medium = (
            f"the {self.training.preset} run's first checkpoint evaluated at {self.training.medium_return:g} or better"
        )
        if self.kind == "medium":
            return f"the policy of {medium}, {noise}"
        return f"the replay buffer of {medium}, all of it"


SAC_PENDULUM = Training(
    preset="sac_pendulum", frames=20_000, every_frames=1_000, eval_episodes=10, medium_return=-700.0
)
"""The run behind the Pendulum datasets. Pendulum's best return is 0, so the preset's stop at -200 is lifted
and the whole budget is trained (the expert is the last policy)."""

RECIPES: dict[str, Recipe] = {
    r.id: r
    for r in (
        Recipe("pendulum/expert-v0", "expert", "Pendulum-v1", SAC_PENDULUM, noise=0.1),
        Recipe("pendulum/medium-v0", "medium", "Pendulum-v1", SAC_PENDULUM, noise=0.1),
        Recipe("pendulum/medium-replay-v0", "medium-replay", "Pendulum-v1", SAC_PENDULUM),
        Recipe("pendulum/random-v0", "random", "Pendulum-v1", None),
    )
}
"""Every dataset that ``rlcli datasets make`` makes, by Minari id: those the shipped Pendulum presets read,
which no server holds."""

DEFAULT_STEPS = 100_000
"""Steps of each played dataset (``--steps``)."""


def command(ids: list[str] | tuple[str, ...]) -> str:
    """The command line that makes the datasets ``ids``."""
    return "rlcli datasets make " + " ".join(ids)


def lookup(ids: list[str] | tuple[str, ...]) -> list[Recipe]:
    """The recipes of ``ids``, in table order, each once.

    Raises:
        InputError: no id, or an id with no recipe (the known ones listed, close ones suggested).
    """
    if not ids:
        raise InputError("ID", f"name the datasets to make, one or more of: {', '.join(RECIPES)}")
    for name in ids:
        if name not in RECIPES:
            close = difflib.get_close_matches(name, list(RECIPES), n=2, cutoff=0.8)
            hint = (
                f"did you mean {' or '.join(repr(c) for c in close)}?"
                if close
                else f"if Minari hosts it, minari download {name} fetches it"
            )
            raise InputError(
                name, f"no recipe makes this dataset; {hint} (rlcli makes {', '.join(RECIPES)}: rlcli datasets list)"
            )
    return [recipe for recipe in RECIPES.values() if recipe.id in ids]


def how_to_get(name: str) -> str:
    """How to put the missing dataset ``name`` in place, in words: the ``rlcli datasets make`` command where
    :data:`RECIPES` has it, else ``minari download`` (for an id Minari hosts) or ``rlcli collect``."""
    recipe = RECIPES.get(name)
    if recipe is None and name.startswith((".", "~", "/")):
        return "rlcli collect writes one"
    if recipe is None:
        return (
            f"if Minari hosts it, `minari download {name}` puts it there, after pip install 'minari[hf]' "
            "(its download goes through huggingface_hub); or rlcli collect writes one of your own"
        )
    minutes = f" (it trains {recipe.training.preset} first: minutes on a CPU)" if recipe.training else ""
    return f"rlcli makes it, no server holds it: `{command([name])}` writes it{minutes}"
