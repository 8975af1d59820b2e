"""Shared fixtures: the layer guard, the runs trained once per session, and two ways to run ``rlcli``: in
this process (``cli``, the default layer) and as the real command (``rlcli``, the integration layer).

Helpers live in ``tests/support/`` (imported as ``support.<role>``); this file holds only fixtures and hooks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

# The guard (autouse), the hook it reads, and the hook that builds the caches a library fills by starting a
# process on first use (matplotlib's font list), before any test is guarded: the default layer starts no process.
# They are one pytest plugin, which tests/test_layers.py loads into sessions of its own.
from support.cli import CliResult, invoke, rlcli_executable
from support.layers import layer_guard, pytest_runtest_makereport, pytest_sessionstart  # noqa: F401
from support.paths import ROOT, env_packages_importable
from support.runs import TrainedRun, train_off_policy, train_offline, train_on_policy, train_pixels

# The tests read rlcli's output as a pipe or a file gives it: as wide as its content, no colour, no live
# display. Rich reads these once, when rlcli's consoles are made (on the first import, in this process for
# in-process tests): the FORCE_COLOR family would make it act as on a terminal, and the COLUMNS that
# pytest-xdist gives its workers (80) would wrap every message the tests look for.
for _variable in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS"):
    os.environ.pop(_variable, None)

# Each pytest-xdist worker computes on its share of the cores, as rlcli's own --jobs gives its processes
# (rlcli.runtime.cores.share_for_jobs): run.threads = "auto" reads it, in this process and in the rlcli processes
# the tests start. Two workers of two threads each on two cores would wait on each other at every matmul.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ and "OMP_NUM_THREADS" not in os.environ:
    from rlcli.runtime.cores import share_for_jobs

    os.environ.update(share_for_jobs(int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))


def pytest_configure(config):
    """Probe every preset's extras (``support.presets``), which imports them, in each process before any
    test is guarded, and after the thread share above is set: glfw (MuJoCo's rendering) starts a python
    child on its first import to read its library's version."""
    import support.presets  # noqa: F401


@pytest.fixture(scope="session", autouse=True)
def offline_root(tmp_path_factory):
    """The folder the tests' random Minari datasets are written to (tests/support/offline.py), once per session."""
    from support import offline

    offline.ROOT = tmp_path_factory.mktemp("datasets")
    return offline.ROOT


RunCli = Callable[..., subprocess.CompletedProcess]


@pytest.fixture(scope="session")
def rlcli() -> RunCli:
    """Run ``rlcli ARGS`` in a subprocess; returns the CompletedProcess with text output.

    The terminal is made wide so that rich does not wrap the messages tests look for.
    """
    exe = rlcli_executable()

    def run(*args: str | Path, cwd: str | Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess:
        env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1", "TERM": "dumb"}
        return subprocess.run(
            [exe, *(str(a) for a in args)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


@pytest.fixture
def write_toml(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write ``text`` to ``tmp_path / name`` and return the path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def cartpole_dqn():
    """``cartpole_dqn(**algo)``: DQN on 4 CartPole envs whose episodes end by 7 steps, batches of 32
    frames, minibatches of 8 after 64 frames of warm-up (built, not started; the caller closes it)."""
    from rlcli.config.load import validate_data
    from rlcli.run import build_run

    def make(**algo):
        return build_run(
            validate_data(
                {
                    "run": {"seed": 4, "device": "cpu"},
                    "env": {
                        "id": "CartPole-v1",
                        "num_envs": 4,
                        "vectorization": "vector_entry_point",
                        "max_episode_steps": 7,
                    },
                    "algo": {
                        "name": "dqn",
                        "batch_size": 8,
                        "learning_starts": 64,
                        "replay": {"capacity": 10_000},
                        **algo,
                    },
                    "collector": {"frames_per_batch": 32, "total_frames": 3200},
                }
            )
        )

    return make


class FakeClock:
    """Seconds that move only by ``advance``; binary fractions keep every sum exact."""

    def __init__(self, start: float = 1000.0):
        self.now = start
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """``cli(*args, cwd=ROOT)``: ``rlcli ARGS`` in this process (see :func:`support.cli.invoke`)."""
    return invoke


@pytest.fixture
def env_packages() -> None:
    """``--env-package rlcli_test_envs`` (and ``broken_envs``) importable in this process."""
    env_packages_importable()


@pytest.fixture(scope="session")
def on_policy_run(tmp_path_factory) -> TrainedRun:
    """``rlcli train ppo_cartpole`` for 4,096 frames with checkpoints every 2,048, console output kept."""
    return train_on_policy(tmp_path_factory.mktemp("on-policy"))


@pytest.fixture(scope="session")
def off_policy_run(tmp_path_factory) -> TrainedRun:
    """SAC on Pendulum for 480 frames: a checkpoint holding its replay buffer."""
    return train_off_policy(tmp_path_factory.mktemp("off-policy"))


@pytest.fixture(scope="session")
def offline_run(tmp_path_factory, offline_root) -> TrainedRun:
    """IQL for 40 gradient steps on a Minari dataset of random Pendulum episodes."""
    return train_offline(tmp_path_factory.mktemp("offline"))


@pytest.fixture(scope="session")
def pixel_run(tmp_path_factory) -> TrainedRun:
    """PPO on the corridor seen as a uint8 image beside its position (a ``Dict`` observation), 640 frames."""
    return train_pixels(tmp_path_factory.mktemp("pixels"))


@pytest.fixture
def copy_run(tmp_path) -> Callable[..., Path]:
    """``copy_run(run, edit_config=None)``: a copy of a session run's folder under this test's
    tmp_path, to change; ``edit_config(text) -> text`` rewrites its config.toml."""

    def copy(run: TrainedRun, edit_config: Callable[[str], str] | None = None) -> Path:
        folder = tmp_path / "copies" / run.folder.name
        shutil.copytree(run.folder, folder)
        if edit_config is not None:
            config = folder / "config.toml"
            config.write_text(edit_config(config.read_text(encoding="utf-8")), encoding="utf-8")
        return folder

    return copy
