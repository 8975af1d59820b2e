"""``rlcli collect`` in a subprocess: datasets that minari reads back, from a trained policy and from a
run's replay buffer, and the bad input and interruptions that must leave nothing half-written."""

from __future__ import annotations

import signal
import subprocess
import time

import numpy as np
import pytest

from conftest import assert_bad_input, rlcli_executable, sigint_default
from rlcli.config.load import validate_data
from rlcli.datasets import load_dataset, open_dataset
from rlcli.run import build_run
from rlcli.trainer import train

minari = pytest.importorskip("minari", reason="the minari extra needs Python 3.11+")


@pytest.fixture(scope="module")
def sac_run(tmp_path_factory):
    """A short SAC run on Pendulum with a checkpoint holding its replay buffer."""
    folder = tmp_path_factory.mktemp("runs")
    state = train(build_run(validate_data({
        "run": {"seed": 0, "device": "cpu", "output_dir": str(folder)},
        "env": {"id": "Pendulum-v1", "num_envs": 2},
        "network": {"hidden_sizes": [16, 16]},
        "algo": {"name": "sac", "batch_size": 16, "learning_starts": 32},
        "collector": {"frames_per_batch": 8, "total_frames": 480},
        "timing": {"enabled": False},
    })))
    return state.run_dir


def test_a_played_policy_becomes_a_dataset_minari_reads_with_the_same_transitions(rlcli, sac_run, tmp_path):
    out = tmp_path / "pendulum-sac-v0"
    result = rlcli("collect", sac_run, "--steps", "450", "--out", out, "--noise", "0.1", "--seed", "3")
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


def test_the_replay_buffer_becomes_a_dataset_of_its_transitions(rlcli, sac_run, tmp_path):
    out = tmp_path / "pendulum-replay-v0"
    result = rlcli("collect", "--from-replay", sac_run, "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    loaded = load_dataset(open_dataset(str(out)))
    # 480 frames from 2 envs: every transition, chained back into 2 episodes per env of 200 and one of 40.
    assert loaded.transitions == 480
    assert sorted(np.diff(loaded.episode_ends.numpy(), prepend=0).tolist()) == [40, 40, 200, 200]


def test_an_existing_dataset_is_refused_unless_overwritten(rlcli, sac_run, tmp_path):
    out = tmp_path / "twice-v0"
    assert rlcli("collect", sac_run, "--steps", "20", "--out", out).returncode == 0
    assert_bad_input(rlcli("collect", sac_run, "--steps", "20", "--out", out), "already exists", "--overwrite")
    again = rlcli("collect", sac_run, "--steps", "30", "--out", out, "--overwrite")
    assert again.returncode == 0 and minari.MinariDataset(out / "data").total_steps == 30


def test_bad_runs_and_flags_exit_2_naming_them(rlcli, sac_run, tmp_path):
    assert_bad_input(rlcli("collect", tmp_path, "--steps", "20", "--out", tmp_path / "x-v0"), str(tmp_path))
    assert_bad_input(rlcli("collect", sac_run, "--out", tmp_path / "x-v0"), "--steps")
    assert_bad_input(rlcli("collect", sac_run, "--steps", "5"), "--out")
    assert not (tmp_path / "x-v0").exists()


def test_ctrl_c_leaves_no_half_written_dataset(sac_run, tmp_path):
    out = tmp_path / "interrupted-v0"
    process = subprocess.Popen([rlcli_executable(), "collect", str(sac_run), "--steps", "1000000", "--out", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    time.sleep(4)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_disk_without_room_is_refused_before_anything_is_written(sac_run, tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    from rlcli.config.errors import InputError
    from rlcli.recording import record_policy

    usage = namedtuple("usage", "total used free")
    real = shutil.disk_usage
    # The disk of tmp_path reports 100 kB free: 2,000 steps of Pendulum need more.
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(real(path).total, real(path).used, 100_000))
    with pytest.raises(InputError) as info:
        record_policy(sac_run, steps=2000, out=str(tmp_path / "full-v0"))
    assert "free; nothing was written" in str(info.value) and str(tmp_path) in str(info.value)
    assert list(tmp_path.iterdir()) == []
