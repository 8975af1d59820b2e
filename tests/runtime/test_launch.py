"""``rlcli train --nproc N`` (:mod:`rlcli.runtime.launch`): ranks started by torchrun's launcher, rank 0 writing
the one run folder, a dead rank named, Ctrl-C to every rank (integration layer: real ranks); bad
input refused in this process before any rank starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from rlcli.config.errors import InputError
from rlcli.runtime.distributed import COLLECTIVE_TIMEOUT
from rlcli.runtime.launch import RankFailure, check_ranks
from support.cli import assert_bad_input, rlcli_executable
from support.paths import ENV_PACKAGES, ROOT
from support.run_folders import only_run_folder

SMALL = ("--set", "collector.total_frames=4096", "--set", "checkpoint.every_frames=1024")


@pytest.mark.parametrize(("code", "text"), [(-9, "rank 1 was killed by SIGKILL"), (3, "rank 1 exited with status 3")])
def test_rank_failures_say_which_rank_and_how(code, text):
    assert text in str(RankFailure(1, code))


def test_a_rank_cannot_launch_ranks_of_its_own(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(InputError, match="already a rank started by torchrun"):
        check_ranks(2, "ppo_cartpole")


@pytest.mark.integration
def test_two_ranks_train_into_one_run_folder(tmp_path, rlcli):
    result = rlcli("train", "ppo_cartpole", "--nproc", "2", "--out", tmp_path, *SMALL, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (folder,) = tmp_path.iterdir()
    info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert info["status"] == "completed" and info["world_size"] == 2 and info["frames"] == 4096
    assert "update.all_reduce" in info["timing"]
    # Only rank 0 printed the run: one banner, one summary.
    assert result.stdout.count("run folder:") == 2 and "on 2 ranks" in result.stdout
    saved = sorted(folder.glob("checkpoints/*.pt"))
    assert saved, "no checkpoint"
    import torch

    assert len(torch.load(saved[-1], weights_only=True)["ranks"]) == 2


@pytest.mark.integration
def test_resume_with_another_number_of_ranks_is_refused(tmp_path, rlcli):
    result = rlcli("train", "ppo_cartpole", "--nproc", "2", "--out", tmp_path, *SMALL, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (folder,) = tmp_path.iterdir()
    more = ("--set", "collector.total_frames=8192")
    assert_bad_input(rlcli("train", "--resume", folder, "--nproc", "1", *more), "trained by 2 rank(s)", "--nproc 2")
    # Without --nproc the one process finds out from the checkpoint, before writing anything.
    assert_bad_input(rlcli("train", "--resume", folder, *more), "saved by 2 rank(s)", "--nproc 2")
    resumed = rlcli("train", "--resume", folder, "--nproc", "2", *more, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads((folder / "run.json").read_text(encoding="utf-8"))["frames"] == 8192


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--nproc", "0"), ("--nproc 0", "must be at least 1")),
        (("--nproc", "3", "--set", 'run.parallel="split"'), ("env.num_envs", "multiple of the world size (3)")),
        (("--nproc", "2", "--seeds", "0,1"), ("--seeds",)),
    ],
)
def test_bad_rank_counts_exit_2_before_any_rank_starts(tmp_path, cli, args, fragments):
    # In this process: a rank started here would be a process, which the layer guard refuses.
    result = cli("train", "ppo_cartpole", "--out", tmp_path, *args)
    assert_bad_input(result, *fragments)
    assert not any(tmp_path.iterdir()), "a run folder was made"


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA")
def test_a_cuda_run_without_cuda_is_refused_once_before_any_rank_starts(tmp_path, cli):
    output = assert_bad_input(
        cli("train", "ppo_cartpole", "--out", tmp_path, "--nproc", "2", "--device", "cuda"), "run.device", "CUDA"
    )
    # Said by the launcher, not by each rank.
    assert output.count("run.device") == 1 and "exitcode" not in output
    assert not any(tmp_path.iterdir()), "a run folder was made"


@pytest.mark.integration
def test_each_rank_keeps_its_own_memmap_buffer_in_a_configured_folder(tmp_path, rlcli):
    chosen = tmp_path / "replay"
    chosen.mkdir()
    # Rank 1's folder cannot be made: rank 1 alone fails, with its folder named, and the run ends at once.
    (chosen / "rank-1").write_text("in the way", encoding="utf-8")
    # Well within the collective timeout: a rank 0 left waiting for rank 1 would run past it.
    result = rlcli(
        "train",
        "dqn_cartpole",
        "--out",
        tmp_path / "runs",
        "--nproc",
        "2",
        "--set",
        'algo.replay.storage="memmap"',
        "--set",
        f"algo.replay.directory={json.dumps(str(chosen))}",
        timeout=COLLECTIVE_TIMEOUT.total_seconds() / 2,
    )
    # Rank 1's own error ends the run with its status (2), even when rank 0, waiting for it in a
    # collective, fails the same second and says so (a lost rank is never taken for the cause).
    assert_bad_input(result, "algo.replay.directory", str(chosen / "rank-1"))


def _rank_pids(parent: int) -> dict[int, int]:
    """RANK -> pid of the workers below ``parent``."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        ppid = int(next(line for line in status.splitlines() if line.startswith("PPid:")).split()[1])
        ranks = [item for item in environ if item.startswith(b"RANK=")]
        if ranks and ppid == parent:
            found[int(ranks[0].split(b"=")[1])] = int(entry.name)
    return found


def _wait_for_rows(proc: subprocess.Popen, out: Path, rows: int = 2) -> None:
    """Wait until rank 0 has written ``rows`` metrics rows, so that the ranks are past start-up and
    inside the loop, or fail when the launcher exits first or nothing comes within two minutes."""
    deadline = time.monotonic() + 120
    while True:
        found = list(out.glob("*/metrics.csv"))
        if found and len(found[0].read_text(encoding="utf-8").splitlines()) > rows:
            return
        assert proc.poll() is None, "the launcher exited before the ranks trained"
        assert time.monotonic() < deadline, "the ranks did not start training"
        time.sleep(0.1)


@pytest.mark.integration
def test_a_dead_rank_ends_the_run_with_its_name_and_a_consistent_folder(tmp_path):
    proc = subprocess.Popen(
        [
            rlcli_executable(),
            "train",
            "ppo_cartpole",
            "--nproc",
            "2",
            "--out",
            str(tmp_path),
            "-q",
            "--set",
            "collector.total_frames=100000000",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_rows(proc, tmp_path)
        os.kill(_rank_pids(proc.pid)[1], signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1, stdout + stderr
    assert "rank 1 was killed by SIGKILL" in stderr
    (folder,) = tmp_path.iterdir()
    info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    # Rank 0 completed the folder: a final status, never "running".
    assert info["status"] in ("failed", "interrupted"), info["status"]
    assert (folder / "final.pt").is_file()


@pytest.mark.integration
def test_a_mask_that_allows_nothing_on_one_rank_ends_every_rank_within_seconds(tmp_path):
    """Rank 1's env allows no action from its 100th step (iteration 2, after a gradient step together):
    rank 1 stops alone while rank 0 waits for it in a collective. The run must end at once, not at the
    collective timeout (COLLECTIVE_TIMEOUT, minutes), with rank 1's own error and status."""
    path = os.environ.get("PYTHONPATH")
    env = {
        **os.environ,
        "PYTHONPATH": f"{ENV_PACKAGES}{os.pathsep}{path}" if path else str(ENV_PACKAGES),
        "COLUMNS": "400",
        "NO_COLOR": "1",
    }
    # 4 envs a rank, 64 steps an iteration: rank 1's envs allow nothing from their step 100, in iteration 2.
    settings = {
        "env.id": '"RlcliTest/TaxiMaskEmptiesOnRank-v0"',
        "env.kwargs": "{rank = 1, at = 100}",
        "env.num_envs": "4",
        "collector.frames_per_batch": "256",
        "algo.minibatch_size": "64",
    }
    overrides = [item for key, value in settings.items() for item in ("--set", f"{key}={value}")]
    command = ["train", "ppo_taxi_masked", "--nproc", "2", "--env-package", "rlcli_test_envs", "-q"]
    proc = subprocess.Popen(
        [rlcli_executable(), *command, "--out", str(tmp_path), *overrides],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Start-up and one iteration take seconds; a rank left waiting would hold the run for minutes.
        stdout, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        # The ranks run in sessions of their own (torchrun's launcher starts them so) and hold the pipes.
        for pid in _rank_pids(proc.pid).values():
            os.kill(pid, signal.SIGKILL)
        proc.kill()
        stdout, stderr = proc.communicate()
        pytest.fail(f"the run did not end within 60 s:\n{stdout[-3000:]}{stderr[-3000:]}")
    output = stdout + stderr
    assert proc.returncode == 1, output
    assert "Traceback" not in output, output
    said = (
        "rank 1, iteration 2: the action mask of env 0 (RlcliTest/TaxiMaskEmptiesOnRank-v0) at its step 100 "
        "is all False (the env allows no action)"
    )
    assert said in stderr, output
    # Rank 0 completed the folder, with the weights of the last whole iteration.
    info = json.loads((only_run_folder(tmp_path) / "run.json").read_text(encoding="utf-8"))
    assert info["status"] == "failed" and info["iterations"] == 1, info


@pytest.mark.integration
def test_ctrl_c_stops_every_rank_with_a_checkpoint_and_exit_130(tmp_path):
    from support.cli import sigint_default

    proc = subprocess.Popen(
        [
            rlcli_executable(),
            "train",
            "ppo_cartpole",
            "--nproc",
            "2",
            "--out",
            str(tmp_path),
            "-q",
            "--set",
            "collector.total_frames=100000000",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=sigint_default,
    )
    try:
        _wait_for_rows(proc, tmp_path)
        # What a terminal's Ctrl-C does: SIGINT to the launcher and its ranks alike.
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr and "--nproc 2" in stderr
    (folder,) = tmp_path.iterdir()
    info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert info["status"] == "interrupted" and info["checkpoint"]["frames"] == info["frames"]


@pytest.mark.integration
def test_torchrun_runs_the_module_as_a_cluster_would(tmp_path):
    """What each node of a cluster runs: torchrun itself, with rlcli as a module."""
    import sys

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "rlcli",
            "train",
            "ppo_cartpole",
            "--out",
            str(tmp_path),
            "-q",
            *SMALL,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (folder,) = tmp_path.iterdir()
    info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert info["status"] == "completed" and info["world_size"] == 2 and info["frames"] == 4096
