"""The trainer's tests' run stopped partway, with a checkpoint, to resume from (its config from
``support.configs.small_config``)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from rlcli.run import build_run
from rlcli.trainer.loop import train
from rlcli.trainer.state import Hooks
from support.configs import STOP_AFTER, small_config


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
