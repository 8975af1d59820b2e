"""SIGTERM (a scheduler, ``docker stop``) ends a run as cleanly as Ctrl-C: whole iterations
saved, ``run.json`` says interrupted, exit 143."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch

from conftest import ROOT, rlcli_executable


def start_and_wait_for_rows(out: Path, rows: int = 2) -> subprocess.Popen:
    proc = subprocess.Popen([rlcli_executable(), "train", "ppo_pendulum", "--out", str(out), "-q"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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


@pytest.mark.parametrize("signals", [1, 2], ids=["once", "twice"])
def test_sigterm_saves_the_run_and_exits_143(tmp_path, signals):
    out = tmp_path / "runs"
    proc = start_and_wait_for_rows(out)
    for _ in range(signals):
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.05)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stdout + stderr
    assert "Traceback" not in stdout + stderr
    (run_dir,) = out.iterdir()
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
