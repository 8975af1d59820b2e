"""Small runs for the trainer's tests: a config builder and a run stopped partway,
with a checkpoint, to resume from."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from rlcli.config.load import validate_data
from rlcli.run import build_run
from rlcli.trainer.loop import train
from rlcli.trainer.state import Hooks


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


@dataclass
class Stopped:
    """A run folder stopped after 2 of its 5 iterations, with a checkpoint of the second."""

    folder: Path
    config: object
    """The config it was trained with (its output_dir is the original run's parent, as in the
    folder's config.toml: a resumed run keeps its config, wherever its folder now is)."""


@pytest.fixture(scope="session")
def _stopped_once(tmp_path_factory) -> Stopped:
    def stop(state):
        if state.iteration == STOP_AFTER:
            state.stop_requested = True

    # A return no run reaches: a test may mark the checkpoint solved.
    cfg = small_config(tmp_path_factory.mktemp("stopped"), run={"stop_at_return": 10000.0})
    state = train(build_run(cfg), hooks=Hooks(on_iteration_end=[stop]))
    assert state.status == "interrupted" and state.checkpoint_frames == STOP_AFTER * 64
    return Stopped(state.run_dir, cfg)


@pytest.fixture
def stopped_run(_stopped_once, tmp_path) -> Stopped:
    """A copy of the stopped run for this test alone."""
    folder = tmp_path / _stopped_once.folder.name
    shutil.copytree(_stopped_once.folder, folder)
    return Stopped(folder, _stopped_once.config)
