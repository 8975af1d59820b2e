"""Small configs the trainer's tests build runs from."""

from __future__ import annotations

from pathlib import Path

from rlcli.config.load import validate_data


def small_config(output_dir: Path, **sections):
    """A PPO run on 4 vectorized CartPoles, 64 frames a batch, 5 batches; ``sections`` update it
    (an ``algo`` of another name replaces it)."""
    data = {
        "run": {"seed": 0, "device": "cpu", "output_dir": str(output_dir)},
        "env": {"id": "CartPole-v1", "num_envs": 4, "vectorization": "vector_entry_point"},
        "algo": {"name": "ppo", "minibatch_size": 32, "epochs": 1},
        "collector": {"frames_per_batch": 64, "total_frames": 320},
        "checkpoint": {"every_frames": 0},
        "timing": {"enabled": False},
    }
    for name, values in sections.items():
        replace = name == "algo" and values.get("name", "ppo") != "ppo"
        data[name] = values if replace else {**data.get(name, {}), **values}
    return validate_data(data)


STOP_AFTER = 2
"""The iteration after which the trainer tests' ``stopped_run`` fixture stops its run."""
