"""``rlcli collect``: datasets that minari reads back, from a trained policy and from a run's replay
buffer, and the bad input and interruptions that must leave nothing half-written.

In this process (Typer's runner), on the session's SAC Pendulum run (``off_policy_run``, its
checkpoint holding the replay buffer). Integration: Ctrl-C of the real command while it collects,
and a bad input as the shell sees it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import numpy as np
import pytest

from rlcli.datasets import load_dataset, open_dataset
from support.cli import assert_bad_input, rlcli_executable, sigint_default

minari = pytest.importorskip("minari", reason="the minari extra needs Python 3.11+")


def test_a_played_policy_becomes_a_dataset_minari_reads_with_the_same_transitions(cli, off_policy_run, tmp_path):
    out = tmp_path / "pendulum-sac-v0"
    result = cli("collect", off_policy_run.folder, "--steps", "450", "--out", out, "--noise", "0.1", "--seed", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "wrote 450 steps in 3 episodes" in result.stdout
    dataset = minari.MinariDataset(out / "data")
    episodes = list(dataset.iterate_episodes())
    assert dataset.total_steps == 450 and [len(e.rewards) for e in episodes] == [200, 200, 50]
    # Pendulum's clock ends each full episode; the last one is cut by the step budget.
    assert [bool(e.truncations[-1]) for e in episodes] == [True, True, True]
    assert not any(e.terminations.any() for e in episodes)
    loaded = load_dataset(open_dataset(str(out)))
    assert np.allclose(loaded.observations[loaded.rows + 1].numpy()[:200], episodes[0].observations[1:])
    assert loaded.env_id == "Pendulum-v1"
    # Observations are stored raw; the actions stay in the bounds.
    assert float(np.abs(loaded.actions.numpy()).max()) <= 2.0


def test_the_replay_buffer_becomes_a_dataset_of_its_transitions(cli, off_policy_run, tmp_path):
    out = tmp_path / "pendulum-replay-v0"
    result = cli("collect", "--from-replay", off_policy_run.folder, "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    loaded = load_dataset(open_dataset(str(out)))
    # 480 frames from 2 envs: every transition, chained back into 2 episodes per env of 200 and one of 40.
    assert loaded.transitions == 480
    assert sorted(np.diff(loaded.episode_ends.numpy(), prepend=0).tolist()) == [40, 40, 200, 200]


def test_an_existing_dataset_is_refused_unless_overwritten(cli, off_policy_run, tmp_path):
    out = tmp_path / "twice-v0"
    assert cli("collect", off_policy_run.folder, "--steps", "20", "--out", out).returncode == 0
    assert_bad_input(
        cli("collect", off_policy_run.folder, "--steps", "20", "--out", out), "already exists", "--overwrite"
    )
    again = cli("collect", off_policy_run.folder, "--steps", "30", "--out", out, "--overwrite")
    assert again.returncode == 0 and minari.MinariDataset(out / "data").total_steps == 30


def test_bad_runs_and_flags_exit_2_naming_them(cli, off_policy_run, tmp_path):
    assert_bad_input(cli("collect", tmp_path, "--steps", "20", "--out", tmp_path / "x-v0"), str(tmp_path))
    assert_bad_input(cli("collect", off_policy_run.folder, "--out", tmp_path / "x-v0"), "--steps")
    assert_bad_input(cli("collect", off_policy_run.folder, "--steps", "5"), "--out")
    assert not (tmp_path / "x-v0").exists()


@pytest.mark.integration
def test_a_bad_flag_exits_2_without_a_traceback_as_the_shell_sees_it(rlcli, off_policy_run, tmp_path):
    assert_bad_input(rlcli("collect", off_policy_run.folder, "--out", tmp_path / "x-v0"), "--steps")
    assert not (tmp_path / "x-v0").exists()


# An --env-package for the test's own process: Pendulum's step touches a file, so that the test
# knows the collection is under way. (Extra --env-package modules beyond the run's are allowed.)
STEPPING = """\
import os
from pathlib import Path

from gymnasium.envs.classic_control.pendulum import PendulumEnv

_step = PendulumEnv.step


def _step_and_mark(self, action):
    Path(os.environ["RLCLI_TEST_STEPPING"]).touch()
    return _step(self, action)


PendulumEnv.step = _step_and_mark
"""


@pytest.mark.integration
def test_ctrl_c_leaves_no_half_written_dataset(off_policy_run, tmp_path):
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "mark_pendulum_steps.py").write_text(STEPPING, encoding="utf-8")
    marker = tmp_path / "stepping"
    datasets = tmp_path / "datasets"
    datasets.mkdir()
    path = os.environ.get("PYTHONPATH")
    env = {
        **os.environ,
        "RLCLI_TEST_STEPPING": str(marker),
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "code"), *([path] if path else [])]),
    }
    process = subprocess.Popen(
        [
            rlcli_executable(),
            "collect",
            str(off_policy_run.folder),
            "--steps",
            "1000000",
            "--out",
            str(datasets / "interrupted-v0"),
            "--env-package",
            "mark_pendulum_steps",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=sigint_default,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the collection never started"
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert list(datasets.iterdir()) == []


def test_a_disk_without_room_is_refused_before_anything_is_written(off_policy_run, tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    from rlcli.config.errors import InputError
    from rlcli.datasets.recording import record_policy

    usage = namedtuple("usage", "total used free")
    real = shutil.disk_usage
    # The disk of tmp_path reports 100 kB free: 2,000 steps of Pendulum need more.
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(real(path).total, real(path).used, 100_000))
    with pytest.raises(InputError) as info:
        record_policy(off_policy_run.folder, steps=2000, out=str(tmp_path / "full-v0"))
    assert "free; nothing was written" in str(info.value) and str(tmp_path) in str(info.value)
    assert list(tmp_path.iterdir()) == []
