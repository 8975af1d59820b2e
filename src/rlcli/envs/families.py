"""The tables of env namespaces whose package rlcli imports itself (Atari through ale-py) and of the
gymnasium packages that need an extra, and what they allow of ``[env] kwargs``: fixed tables, never a
name read from a config file."""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EnvFamily:
    """Envs whose ids share a namespace and come from one package, which rlcli imports itself: a
    fixed table of this module, never a name read from a config file."""

    module: str
    """The package whose import registers the ids."""
    extra: str
    """rlcli's optional extra that installs it."""
    vector_kwargs: dict[str, tuple[type, ...]]
    """The keyword arguments its vector entry point takes, with their allowed types."""
    vector_defaults: dict[str, Any]
    """Keyword arguments rlcli passes to the vector entry point unless ``[env] kwargs`` sets them."""
    refused: dict[str, tuple[Any, str]]
    """Keyword arguments refused at one value, with the reason and what to use instead."""


# ale-py's AtariVectorEnv (ale_py/vector_env.py, 0.12): the preprocessing runs in C++ threads.
ATARI = EnvFamily(
    module="ale_py",
    extra="atari",
    vector_kwargs={
        "frameskip": (int,),
        "stack_num": (int,),
        "img_height": (int,),
        "img_width": (int,),
        "grayscale": (bool,),
        "maxpool": (bool,),
        "noop_max": (int,),
        "episodic_life": (bool,),
        "life_loss_info": (bool,),
        "reward_clipping": (bool,),
        "repeat_action_probability": (float, int),
        "num_threads": (int,),
        "thread_affinity_offset": (int,),
        "max_num_frames_per_episode": (int,),
        "full_action_space": (bool,),
        "use_fire_reset": (bool,),
    },
    # The return column must be the game score: rewards are clipped by [env] clip_reward instead,
    # for learning only. A game ends at 108,000 frames (30 minutes of play, 27,000 agent steps at
    # frame skip 4; Machado et al. 2018), ale-py's own default, said here so that no version changes it.
    vector_defaults={"reward_clipping": False, "max_num_frames_per_episode": 108_000},
    refused={
        "reward_clipping": (
            True,
            "the return column would be the clipped score, not the game's; set "
            "[env] clip_reward = 1.0 to clip what the algorithm learns from",
        ),
        "episodic_life": (
            True,
            "ale-py 0.12's vector env restarts the whole game at each lost life, so "
            "every return would be one life's score",
        ),
    },
)

LIFE_LOST = "life_lost"
"""The info key of a lost life in Atari vector envs (:class:`rlcli.envs.AtariLives`, the envpool backend's):
[N] bool, a life was lost in this step and the game goes on."""

ENV_FAMILIES: dict[str, EnvFamily] = {"ALE/": ATARI}
"""Env id prefix -> the family whose package registers it (imported when a config names such an id)."""

GYMNASIUM_EXTRAS = {"gymnasium.envs.box2d": ("box2d", "Box2D"), "gymnasium.envs.mujoco": ("mujoco", "mujoco")}
"""Package of a gymnasium env's entry point -> (rlcli's extra, the module it installs) the env needs."""


def env_family(env_id: str) -> EnvFamily | None:
    """The family of ``env_id`` by its namespace; None for ids of no listed family."""
    return next((family for prefix, family in ENV_FAMILIES.items() if env_id.startswith(prefix)), None)


def register_family(env_id: str) -> str | None:
    """Import the package of ``env_id``'s family, if any, so that its ids are registered; returns why
    it cannot be (the package is missing: install the extra), or None."""
    family = env_family(env_id)
    if family is None:
        return None
    try:
        importlib.import_module(family.module)
    except ImportError as exc:
        return (
            f"{env_id} needs the {family.module} package ({type(exc).__name__}: {exc}); install the "
            f"{family.extra} extra: pip install 'rlcli[{family.extra}]' (pip install -e '.[{family.extra}]' "
            "in a clone)"
        )
    return None


def vector_kwargs_problems(env_id: str, kwargs: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, message) for each of ``kwargs`` that the vector entry point of ``env_id``'s family
    would refuse or that rlcli refuses; none for ids of no listed family."""
    family = env_family(env_id)
    if family is None:
        return []
    problems = []
    for key, value in kwargs.items():
        path = f"env.kwargs.{key}"
        allowed = family.vector_kwargs.get(key)
        if allowed is None:
            close = difflib.get_close_matches(key, list(family.vector_kwargs), n=3)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            problems.append(
                (
                    path,
                    f"{env_id}'s vector env takes no argument {key!r}; {hint}allowed: "
                    + ", ".join(sorted(family.vector_kwargs)),
                )
            )
        elif not isinstance(value, allowed) or (bool not in allowed and isinstance(value, bool)):
            names = " or ".join(kind.__name__ for kind in allowed)
            problems.append((path, f"must be {names}, got {value!r}"))
        elif key in family.refused and value == family.refused[key][0]:
            problems.append((path, f"{key} = {str(value).lower()} is not supported: {family.refused[key][1]}"))
        elif bool not in allowed and isinstance(value, (int, float)) and value < 0:
            problems.append((path, f"must be at least 0, got {value!r}"))
    return problems
