"""SIGTERM (a scheduler, ``docker stop``) ends a run as cleanly as Ctrl-C: whole iterations
saved, ``run.json`` says interrupted, exit 143.

The ``integration`` tests send the signal to the real command. The default layer runs the
command in this process and hands SIGTERM to the handler rlcli installed, as Python does when
the signal arrives, at a chosen point of the run.
"""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch

from support.cli import rlcli_executable
from support.paths import ROOT
from support.processes import deliver


def start_and_wait_for_rows(out: Path, rows: int = 2) -> subprocess.Popen:
    proc = subprocess.Popen(
        [rlcli_executable(), "train", "ppo_pendulum", "--out", str(out), "-q"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = list(out.glob("*/metrics.csv"))
        if found and len(found[0].read_text(encoding="utf-8").splitlines()) > rows:
            return proc
        if proc.poll() is not None:
            pytest.fail(proc.communicate()[1])
        time.sleep(0.1)
    proc.kill()
    pytest.fail("no metrics rows within 120 s")


def wait_until_delivered(pid: int, signum: int, timeout: float = 60.0) -> None:
    """Return once ``signum`` is no longer pending for ``pid`` (Linux's /proc status masks), or when
    the process has gone."""
    bit = 1 << (signum - 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        pending = [int(line.split()[1], 16) for line in status.splitlines() if line.startswith(("SigPnd:", "ShdPnd:"))]
        if not any(mask & bit for mask in pending):
            return
        time.sleep(0.01)
    pytest.fail(f"signal {signum} still pending for {pid} after {timeout} s")


def check_stopped_run(run_dir: Path, stderr: str, signals: int) -> None:
    """What a run stopped by ``signals`` SIGTERMs leaves in its folder and says on stderr."""
    info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    assert info["status"] == "interrupted" and info["signal"] == "SIGTERM"
    with (run_dir / "metrics.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["iteration"]) for r in rows] == list(range(1, info["iterations"] + 1))
    final = torch.load(run_dir / "final.pt", weights_only=True)
    assert final["iteration"] == info["iterations"] and final["agent"]
    if signals == 1:
        # Stopped at the end of an iteration: a checkpoint of exactly that iteration, for --resume.
        saved = torch.load(run_dir / info["checkpoint"]["latest"], weights_only=True)
        assert saved["iteration"] == info["iterations"] and saved["frames"] == info["frames"]
        assert "continue with: rlcli train --resume" in stderr
    assert not list(run_dir.glob(".*"))  # no temporary files left behind


@pytest.mark.parametrize("signals", [1, 2], ids=["once", "twice"])
def test_sigterm_during_an_iteration_saves_the_run_and_exits_143(cli, tmp_path, monkeypatch, signals):
    from rlcli.trainer import loop

    iteration = loop._iteration
    started = []

    def signalled(run, state, *args):
        started.append(state.iteration + 1)
        if len(started) == 3:
            # Within the third iteration: the first signal lets it finish, a second one cuts it short.
            for _ in range(signals):
                deliver(signal.SIGTERM)
        return iteration(run, state, *args)

    monkeypatch.setattr(loop, "_iteration", signalled)
    out = tmp_path / "runs"
    result = cli(
        "train",
        "ppo_cartpole",
        "--set",
        "collector.total_frames=10240",
        "--set",
        "eval.final_episodes=0",
        "--out",
        out,
        "-q",
    )
    assert result.returncode == 143, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert started == [1, 2, 3]
    (run_dir,) = out.iterdir()
    check_stopped_run(run_dir, result.stderr, signals)
    assert json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["iterations"] == (3 if signals == 1 else 2)


@pytest.mark.integration
@pytest.mark.parametrize("signals", [1, 2], ids=["once", "twice"])
def test_sigterm_saves_the_run_and_exits_143(tmp_path, signals):
    out = tmp_path / "runs"
    proc = start_and_wait_for_rows(out)
    for _ in range(signals):
        proc.send_signal(signal.SIGTERM)
        # Two signals sent back to back may merge into one pending signal: send the second only once
        # the first has been delivered to the process.
        wait_until_delivered(proc.pid, signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stdout + stderr
    assert "Traceback" not in stdout + stderr
    (run_dir,) = out.iterdir()
    check_stopped_run(run_dir, stderr, signals)
