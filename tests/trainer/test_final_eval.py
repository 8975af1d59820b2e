"""The final evaluation after the budget (``eval.final_episodes``): what RL-Zoo's table reports,
recorded in ``run.json`` and the summary, the same episodes ``rlcli eval`` plays, and stoppable."""

import json
import os
import signal
import subprocess
import time

from conftest import MINIMAL_TOML, rlcli_executable


def _run_json(out):
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder, json.loads((folder / "run.json").read_text())


def test_a_completed_run_is_scored_by_a_final_evaluation_that_rlcli_eval_plays_again(rlcli, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(MINIMAL_TOML + "\n[eval]\nfinal_episodes = 12\n")
    out = tmp_path / "out"
    done = rlcli("train", config, "--set", f"run.output_dir={json.dumps(str(out))}")
    assert done.returncode == 0, done.stderr
    folder, info = _run_json(out)
    final = info["final_eval"]
    assert info["status"] == "completed" and final["episodes"] == 12 and final["deterministic"] is True
    assert final["min"] <= final["mean"] <= final["max"] and final["std"] >= 0 and final["seconds"] > 0
    # Evaluation time is not training time.
    assert info["wall_time_s"] > 0
    assert "final eval (12 episodes, deterministic)" in done.stdout

    again = rlcli("eval", folder, "--episodes", "12", "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["return_mean"] == final["mean"] and report["return_std"] == final["std"]


def test_final_episodes_zero_turns_it_off(rlcli, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(MINIMAL_TOML + "\n[eval]\nfinal_episodes = 0\n")
    out = tmp_path / "out"
    done = rlcli("train", config, "--set", f"run.output_dir={json.dumps(str(out))}")
    assert done.returncode == 0, done.stderr
    assert _run_json(out)[1]["final_eval"] is None
    assert "final eval" not in done.stdout


def test_a_stop_signal_during_the_final_evaluation_ends_it_and_keeps_the_run(tmp_path):
    # Pendulum's episodes are 200 steps: 5,000 of them take minutes, far longer than the test waits.
    config = tmp_path / "run.toml"
    config.write_text(MINIMAL_TOML.replace("CartPole-v1", "Pendulum-v1") + "\n[eval]\nfinal_episodes = 5000\n")
    out = tmp_path / "out"
    train = subprocess.Popen([rlcli_executable(), "train", str(config), "--set", f"run.output_dir={json.dumps(str(out))}"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "COLUMNS": "400", "NO_COLOR": "1"})
    started = time.monotonic()
    # final.pt is written before the final evaluation starts.
    while not list(out.glob("*/final.pt")):
        assert train.poll() is None, train.communicate()
        assert time.monotonic() - started < 120
        time.sleep(0.05)
    time.sleep(0.5)
    sent = time.monotonic()
    train.send_signal(signal.SIGTERM)
    _, stderr = train.communicate(timeout=60)
    assert time.monotonic() - sent < 5
    assert train.returncode == 143, stderr
    assert "the final evaluation was stopped; the run itself is complete" in stderr
    info = _run_json(out)[1]
    assert info["status"] == "completed" and info["signal"] == "SIGTERM"
    assert info["final_eval"] == {"error": "stopped by SIGTERM"}
