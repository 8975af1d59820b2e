"""Checkpoints and ``rlcli train --resume``.

Integration (the real command): a run killed with SIGKILL (or stopped by SIGINT/SIGTERM) and
resumed writes the same metrics rows as a run never stopped; a run still training in its folder
is not disturbed by a resume. In this process (Typer's runner), on copies of the session's finished
ppo_cartpole run: a finished run extended, and every folder that cannot be resumed refused with
a clear error that leaves it unchanged."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import torch

from support.cli import assert_bad_input, rlcli_executable, sigint_default
from support.paths import ROOT
from support.processes import wait_for
from support.run_folders import only_run_folder, rows_of, snapshot


def start(preset: str, out: Path, *settings: str) -> subprocess.Popen:
    args = [rlcli_executable(), "train", preset, "--out", str(out), "-q"]
    for setting in settings:
        args += ["--set", setting]
    return subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default
    )


def line_count(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


# (preset, settings, frames per batch): small budgets, with checkpoints well before the end.
KILLED = [
    # With in-training evaluation: its columns must come back the same too.
    (
        "ppo_cartpole",
        ("collector.total_frames=40960", "checkpoint.every_frames=8192", "eval.every_frames=10240", "eval.episodes=3"),
        512,
    ),
    ("dqn_cartpole", ("collector.total_frames=12288", "checkpoint.every_frames=4096"), 256),
    ("sac_pendulum", ("collector.total_frames=2000", "checkpoint.every_frames=600"), 8),
    # A team (MAPPO on VMAS), killed mid-episode: the simulator's state, the groups' episode sums and the
    # observations acted on next must come back.
    (
        "mappo_vmas_balance",
        (
            "env.num_envs=4",
            "collector.frames_per_batch=120",
            "collector.total_frames=3600",
            "checkpoint.every_frames=960",
            "algo.epochs=2",
            "algo.minibatch_size=240",
            "network.hidden_sizes=[32, 32]",
            "eval.final_episodes=4",
        ),
        120,
    ),
    # A recurrent policy, killed mid-episode: its memory and episode starts must come back with the envs.
    (
        "ppo_lstm_cartpolenovel",
        (
            "collector.total_frames=10240",
            "checkpoint.every_frames=2048",
            "network.memory_size=32",
            "algo.epochs=2",
            "eval.every_frames=4096",
            "eval.episodes=3",
        ),
        256,
    ),
]


@pytest.mark.integration
@pytest.mark.parametrize(("preset", "settings", "batch"), KILLED, ids=[k[0] for k in KILLED])
def test_kill_9_then_resume_writes_the_rows_of_an_unbroken_run(tmp_path, rlcli, preset, settings, batch):
    # The unbroken run and the one to kill run side by side (one thread each, as configured).
    unbroken = start(preset, tmp_path / "unbroken", *settings)
    killed = start(preset, tmp_path / "killed", *settings)
    out = tmp_path / "killed"
    wait_for(lambda: any(out.glob("*/checkpoints/ckpt-*.pt")), "checkpoint", proc=killed)
    folder = only_run_folder(out)
    first = int(next(folder.glob("checkpoints/ckpt-*.pt")).stem.removeprefix("ckpt-")) // batch
    # Past the checkpoint by a few rows, so that resuming has rows to drop and write again.
    wait_for(lambda: line_count(folder / "metrics.csv") > first + 3, "rows after the checkpoint", proc=killed)
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert json.loads((folder / "run.json").read_text(encoding="utf-8"))["status"] == "running"
    assert unbroken.wait(timeout=300) == 0, unbroken.communicate()[1]

    resumed = rlcli("train", "--resume", folder, "-q", timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    expected = rows_of(only_run_folder(tmp_path / "unbroken"))
    got = rows_of(folder)
    assert [r["iteration"] for r in got] == [str(i) for i in range(1, len(expected) + 1)]
    for want, have in zip(expected, got):
        assert have == want, f"iteration {want['iteration']} differs after resuming: " + str(
            {k: (want[k], have[k]) for k in want if want[k] != have[k]}
        )
    info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert info["status"] == "completed" and info["frames"] == int(expected[-1]["frames"])
    (entry,) = info["resumes"]
    assert entry["exact_envs"] is True and entry["from_frames"] % batch == 0
    assert not list(folder.rglob(".*ckpt*")), "a temporary checkpoint file was left behind"


@pytest.mark.integration
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_saves_a_checkpoint_that_resumes_exactly(tmp_path, rlcli, sig, code):
    settings = ("collector.total_frames=30720", "checkpoint.every_frames=0")
    unbroken = start("ppo_cartpole", tmp_path / "unbroken", *settings)
    stopped = start("ppo_cartpole", tmp_path / "stopped", *settings)
    out = tmp_path / "stopped"
    wait_for(
        lambda: any(out.glob("*/metrics.csv")) and line_count(only_run_folder(out) / "metrics.csv") > 4,
        "metrics rows",
        proc=stopped,
    )
    stopped.send_signal(sig)
    stdout, stderr = stopped.communicate(timeout=120)
    assert stopped.returncode == code, stdout + stderr
    folder = only_run_folder(out)
    info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert info["status"] == "interrupted" and info["signal"] == sig.name
    saved = torch.load(folder / info["checkpoint"]["latest"], weights_only=True)
    assert saved["iteration"] == info["iterations"] < 30
    assert unbroken.wait(timeout=300) == 0

    resumed = rlcli("train", "--resume", folder, "-q", timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert rows_of(folder) == rows_of(only_run_folder(tmp_path / "unbroken"))


@pytest.fixture
def copy_of(on_policy_run, copy_run) -> Path:
    """A copy of the session's finished ppo_cartpole run (4,096 frames, checkpoints at 2,048 and 4,096)."""
    return copy_run(on_policy_run)


def latest(folder: Path) -> Path:
    return sorted(folder.glob("checkpoints/ckpt-*.pt"))[-1]


def test_resume_extends_a_finished_run(copy_of, cli):
    before = rows_of(copy_of)
    result = cli("train", "--resume", copy_of, "--set", "collector.total_frames=6144", "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    after = rows_of(copy_of)
    assert after[: len(before)] == before and len(after) > len(before)
    assert [int(r["iteration"]) for r in after] == list(range(1, len(after) + 1))
    assert int(after[-1]["frames"]) == 6144
    assert "total_frames = 6144" in (copy_of / "config.toml").read_text(encoding="utf-8")
    # Three checkpoints written (2,048 and 4,096 before, 6,144 now): keep_last keeps the newest two.
    assert sorted(p.name for p in copy_of.glob("checkpoints/*")) == ["ckpt-000000004096.pt", "ckpt-000000006144.pt"]


def bad_resume(cli, folder: Path, *fragments: str, extra: tuple[str, ...] = ()) -> str:
    before = snapshot(folder) if folder.exists() else None
    output = assert_bad_input(cli("train", "--resume", folder, *extra, "-q"), *fragments)
    if before is not None:
        assert snapshot(folder) == before, "a failed resume changed the run folder"
    return output


def test_resume_of_a_missing_folder(tmp_path, cli):
    bad_resume(cli, tmp_path / "nowhere", "no such folder")


def test_resume_without_a_checkpoint(copy_of, cli):
    shutil.rmtree(copy_of / "checkpoints")
    bad_resume(cli, copy_of, "holds no checkpoint", "final.pt")


def test_resume_of_a_finished_run_asks_for_more_frames(copy_of, cli):
    bad_resume(cli, copy_of, "collector.total_frames")


def test_resume_refuses_other_settings(copy_of, cli):
    bad_resume(
        cli,
        copy_of,
        "algo.gamma",
        "only collector.total_frames",
        extra=("--set", "algo.gamma=0.9", "--set", "collector.total_frames=8192"),
    )


def test_resume_of_a_truncated_checkpoint(copy_of, cli):
    path = latest(copy_of)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    bad_resume(cli, copy_of, path.name, "truncated or corrupt", extra=("--set", "collector.total_frames=8192"))


def test_resume_of_a_folder_whose_config_no_longer_validates(copy_of, cli):
    config = copy_of / "config.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("gamma = 0.98", "gamma = 1.5"), encoding="utf-8")
    bad_resume(cli, copy_of, "config.toml", "algo.gamma")


def test_resume_with_networks_of_another_shape(copy_of, cli):
    config = copy_of / "config.toml"
    text = config.read_text(encoding="utf-8")
    assert "hidden_sizes = [64, 64]" in text
    config.write_text(text.replace("hidden_sizes = [64, 64]", "hidden_sizes = [32]"), encoding="utf-8")
    bad_resume(cli, copy_of, "do not fit", "[32, 4]", extra=("--set", "collector.total_frames=8192"))


class Payload:
    """Runs a shell command when unpickled by a loader that builds arbitrary objects."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_checkpoint_that_would_run_code_is_refused_unrun(copy_of, cli, tmp_path):
    marker = tmp_path / "payload-ran"
    path = latest(copy_of)
    honest = torch.load(path, weights_only=True)
    torch.save({**honest, "agent": Payload(marker)}, path)
    bad_resume(cli, copy_of, "refused", "could run code", extra=("--set", "collector.total_frames=8192"))
    assert not marker.exists(), "the payload ran"


@pytest.mark.integration
def test_resume_of_a_run_still_training_is_refused(tmp_path, rlcli):
    out = tmp_path / "live"
    live = start("ppo_cartpole", out, "collector.total_frames=10000000", "checkpoint.every_frames=2048")
    try:
        wait_for(lambda: any(out.glob("*/checkpoints/ckpt-*.pt")), "checkpoint", proc=live)
        result = rlcli("train", "--resume", only_run_folder(out), "-q")
        assert_bad_input(result, "another rlcli process is training in it")
        assert live.poll() is None, "the running run was disturbed"
    finally:
        live.kill()
        live.communicate(timeout=60)
