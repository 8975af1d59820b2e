"""Team env ids: PettingZoo's parallel registry (with the MPE2 envs rlcli registers into it from a
fixed table) and VMAS scenarios as ``vmas/<scenario>``. Torch-free: a config's ``[env] id`` is checked
here without building anything."""

from __future__ import annotations

import difflib
import importlib
import importlib.util
from pathlib import Path
from typing import Literal

import gymnasium as gym

TeamKind = Literal["pettingzoo", "vmas"]

VMAS_PREFIX = "vmas/"

MPE2_ENVS: dict[str, str] = {
    "mpe2/simple-v3": "mpe2.simple_v3:parallel_env",
    "mpe2/simple_adversary-v3": "mpe2.simple_adversary_v3:parallel_env",
    "mpe2/simple_crypto-v3": "mpe2.simple_crypto_v3:parallel_env",
    "mpe2/simple_push-v3": "mpe2.simple_push_v3:parallel_env",
    "mpe2/simple_reference-v3": "mpe2.simple_reference_v3:parallel_env",
    "mpe2/simple_speaker_listener-v4": "mpe2.simple_speaker_listener_v4:parallel_env",
    "mpe2/simple_spread-v3": "mpe2.simple_spread_v3:parallel_env",
    "mpe2/simple_tag-v3": "mpe2.simple_tag_v3:parallel_env",
    "mpe2/simple_world_comm-v3": "mpe2.simple_world_comm_v3:parallel_env",
}
"""MPE2 (which replaced ``pettingzoo.mpe``) has no registry of its own: rlcli registers these ids into
PettingZoo's, each the ``parallel_env`` of its mpe2 module (mpe2 1.1). PettingZoo reads ``_v3`` as ``-v3``."""

EXTRAS = {"pettingzoo": "pettingzoo", "vmas": "vmas"}
"""The rlcli extra that installs each kind of team env."""


def _install(extra: str) -> str:
    return f"install the {extra} extra: pip install 'rlcli[{extra}]' (pip install -e '.[{extra}]' in a clone)"


def _pettingzoo():
    """PettingZoo with the MPE2 ids registered (once), or None when it is not installed."""
    try:
        pettingzoo = importlib.import_module("pettingzoo")
    except ImportError:
        return None
    registry = pettingzoo.parallel_registry
    if importlib.util.find_spec("mpe2") is not None:
        for env_id, entry_point in MPE2_ENVS.items():
            if env_id not in registry:
                pettingzoo.register("parallel", env_id, entry_point=entry_point)
    return pettingzoo


def normalized(env_id: str) -> str:
    """``env_id`` as PettingZoo's registry spells it (``_v3`` -> ``-v3``); VMAS ids are left as they are."""
    if env_id.startswith(VMAS_PREFIX):
        return env_id
    pettingzoo = _pettingzoo()
    if pettingzoo is None:
        return env_id
    try:
        return pettingzoo.spec("parallel", env_id).id
    except Exception:  # noqa: BLE001 - any lookup failure: the id as given
        return env_id


def team_kind(env_id: str) -> TeamKind | None:
    """Which kind of team env ``env_id`` names: ``vmas`` for a ``vmas/`` id, ``pettingzoo`` for an id of
    PettingZoo's parallel registry; None for any other id (a gymnasium one, or an unknown one)."""
    if env_id.startswith(VMAS_PREFIX):
        return "vmas"
    # A gymnasium id is never a team's, and PettingZoo's are namespaced: no import of PettingZoo for either.
    if "/" not in env_id or env_id in gym.registry:
        return None
    pettingzoo = _pettingzoo()
    if pettingzoo is None:
        return None
    try:
        pettingzoo.spec("parallel", env_id)
    except Exception:  # noqa: BLE001 - PettingZoo raises several kinds for an id it lacks
        return None
    return "pettingzoo"


def vmas_scenarios() -> list[str]:
    """Every scenario VMAS offers, or [] without VMAS: the scenario files under its ``scenarios`` folder, where
    VMAS's own loader looks them up by name. Read from the files, not imported: importing VMAS imports torch,
    and ``rlcli validate`` checks a config without it."""
    spec = importlib.util.find_spec("vmas")
    if spec is None or not spec.submodule_search_locations:
        return []
    folder = Path(next(iter(spec.submodule_search_locations))) / "scenarios"
    return sorted({path.stem for path in folder.rglob("*.py") if not path.stem.startswith("_")})


def team_id_problem(env_id: str, gymnasium_ids: list[str]) -> str | None:
    """Why ``env_id``, which gymnasium does not know, names no team env either: the registries searched,
    close ids, an AEC-only id, or the extra to install; None when it is a team env's id."""
    if env_id.startswith(VMAS_PREFIX):
        if importlib.util.find_spec("vmas") is None:
            return f"{env_id} is a VMAS scenario: {_install('vmas')}"
        scenario = env_id[len(VMAS_PREFIX) :]
        known = vmas_scenarios()
        if scenario not in known:
            close = difflib.get_close_matches(scenario, known, n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(VMAS_PREFIX + c for c in close)}?" if close else ""
            return f"unknown VMAS scenario {scenario!r}{hint}; VMAS has: {', '.join(known)}"
        return None
    if team_kind(env_id) is not None:
        return None
    pettingzoo = _pettingzoo()
    if pettingzoo is not None and "/" in env_id:
        try:
            spec = pettingzoo.spec("aec", env_id)
        except Exception:  # noqa: BLE001
            spec = None
        if spec is not None:
            return (
                f"{spec.id} is a turn-based (AEC) PettingZoo env with no parallel form; rlcli steps every "
                "agent at once: use a parallel id, or register PettingZoo's aec_to_parallel of it from your "
                "--env-package"
            )
    team_ids = [*pettingzoo.parallel_registry] if pettingzoo is not None else []
    close = difflib.get_close_matches(normalized(env_id), [*gymnasium_ids, *team_ids], n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    also = "; PettingZoo's parallel registry (MPE2 included) has no such team env either" if pettingzoo else ""
    more = (
        ""
        if pettingzoo is not None and importlib.util.find_spec("vmas") is not None
        else " (the pettingzoo and vmas extras add team envs: PettingZoo and MPE2 ids, vmas/<scenario>)"
    )
    return f"unknown gymnasium env id {env_id!r}{hint}{also}{more}"


def team_extra_problem(env_id: str) -> str | None:
    """The extra a team env of ``env_id`` needs, if it is missing (PettingZoo's namespaced ids and
    ``mpe2/`` ids need pettingzoo, and mpe2 for the latter)."""
    if env_id.startswith("mpe2/") and (
        importlib.util.find_spec("pettingzoo") is None or importlib.util.find_spec("mpe2") is None
    ):
        return f"{env_id} is an MPE2 env: {_install('pettingzoo')}"
    return None
