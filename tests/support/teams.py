"""Team run configs for the teams tests: small runs of IPPO and MAPPO on MPE2, VMAS and the test env
``RlcliTest/leavers-v0`` (``tests/envpkg``)."""

from __future__ import annotations

import pytest

from rlcli.config.load import validate_data
from support.paths import env_packages_importable


def needs(*modules: str) -> None:
    """Skip the test unless each of ``modules`` (the pettingzoo or vmas extra's) is installed."""
    for module in modules:
        pytest.importorskip(module)


def leavers() -> None:
    """Register ``RlcliTest/leavers-v0`` in PettingZoo's registry (importing the test env package)."""
    needs("pettingzoo")
    env_packages_importable()
    import rlcli_test_envs.teams  # noqa: F401


def team_config(name: str, env_id: str, *, tmp_path, num_envs: int = 4, frames: int = 64, total: int = 256, **sections):
    """A small run of algorithm ``name`` on ``env_id`` in ``tmp_path``; ``sections`` update its sections key by key."""
    data = {
        "run": {"seed": 1, "device": "cpu", "output_dir": str(tmp_path), "name": f"{name}-team"},
        "env": {"id": env_id, "num_envs": num_envs},
        "network": {"hidden_sizes": [32, 32]},
        "algo": {"name": name, "minibatch_size": 32, "epochs": 2},
        "collector": {"frames_per_batch": frames, "total_frames": total},
        "eval": {"final_episodes": 4},
    }
    for section, values in sections.items():
        data[section] = {**data.get(section, {}), **values}
    return validate_data(data)
