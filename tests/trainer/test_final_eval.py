"""The final evaluation after the budget (``eval.final_episodes``): what RL-Zoo's table reports,
recorded in ``run.json`` and the summary, the same episodes ``rlcli eval`` plays, and stoppable.

The commands run in this process (the ``cli`` fixture); SIGTERM sent to the real command during
the evaluation is the ``integration`` test at the end.
"""

import json
import os
import signal
import subprocess
import time

import pytest

from support.cli import rlcli_executable
from support.presets import MINIMAL_TOML
from support.processes import deliver


def _run_json(out):
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder, json.loads((folder / "run.json").read_text())


def test_a_completed_run_is_scored_by_a_final_evaluation_that_rlcli_eval_plays_again(cli, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(MINIMAL_TOML + "\n[eval]\nfinal_episodes = 12\n")
    out = tmp_path / "out"
    done = cli("train", config, "--set", f"run.output_dir={json.dumps(str(out))}")
    assert done.returncode == 0, done.stderr
    folder, info = _run_json(out)
    final = info["final_eval"]
    assert info["status"] == "completed" and final["episodes"] == 12 and final["deterministic"] is True
    assert final["min"] <= final["mean"] <= final["max"] and final["std"] >= 0 and final["seconds"] > 0
    # Evaluation time is not training time.
    assert info["wall_time_s"] > 0
    assert "final eval (12 episodes, deterministic)" in done.stdout
    # Off a terminal its progress is a line at the start and one at the end.
    assert "final evaluation: 0 of 12 episodes" in done.stdout and "final evaluation: 12 of 12 episodes" in done.stdout

    again = cli("eval", folder, "--episodes", "12", "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["return_mean"] == final["mean"] and report["return_std"] == final["std"]


def test_the_final_evaluation_tells_its_hooks_each_episode_in_order(tmp_path):
    from rlcli.config.load import load_config
    from rlcli.run import build_run
    from rlcli.trainer.loop import train
    from rlcli.trainer.state import Hooks

    config = tmp_path / "run.toml"
    config.write_text(MINIMAL_TOML + "\n[eval]\nfinal_episodes = 7\nnum_envs = 3\n")
    told = []
    cfg = load_config(config, [f"run.output_dir={json.dumps(str(tmp_path / 'out'))}"])
    state = train(
        build_run(cfg), hooks=Hooks(on_final_eval_episode=[lambda s, done, total: told.append((done, total))])
    )
    assert state.final_eval["episodes"] == 7
    # From 0 to all 7, never backwards, and once per step that finished an episode at most.
    assert told[0] == (0, 7) and told[-1] == (7, 7) and {total for _, total in told} == {7}
    assert [done for done, _ in told] == sorted(done for done, _ in told) and len(told) <= 8


def test_final_episodes_zero_turns_it_off(cli, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(MINIMAL_TOML + "\n[eval]\nfinal_episodes = 0\n")
    out = tmp_path / "out"
    done = cli("train", config, "--set", f"run.output_dir={json.dumps(str(out))}")
    assert done.returncode == 0, done.stderr
    assert _run_json(out)[1]["final_eval"] is None
    assert "final eval" not in done.stdout and "final evaluation" not in done.stdout


def pendulum_config(tmp_path):
    # Pendulum's episodes are 200 steps: 5,000 of them take minutes, far longer than either test waits.
    config = tmp_path / "run.toml"
    config.write_text(MINIMAL_TOML.replace("CartPole-v1", "Pendulum-v1") + "\n[eval]\nfinal_episodes = 5000\n")
    return config


def test_a_stop_signal_during_the_final_evaluation_ends_it_at_once_and_keeps_the_run(cli, tmp_path, monkeypatch):
    from rlcli.play.evaluation import Evaluator
    from rlcli.trainer import schedule

    asked = []

    class SignalledEvaluator(Evaluator):
        """The final evaluation, with SIGTERM arriving after its 50th step."""

        def __call__(self, *args, stop=None, **kwargs):
            def stop_after_signal():
                asked.append(len(asked) + 1)
                if len(asked) == 50:
                    deliver(signal.SIGTERM)
                return stop()

            return super().__call__(*args, stop=stop_after_signal, **kwargs)

    monkeypatch.setattr(schedule, "make_evaluator", SignalledEvaluator)
    out = tmp_path / "out"
    done = cli("train", pendulum_config(tmp_path), "--set", f"run.output_dir={json.dumps(str(out))}")
    assert done.returncode == 143, done.stdout + done.stderr
    # The evaluation ended at the first step after the signal.
    assert len(asked) == 50
    assert "the final evaluation was stopped; the run itself is complete" in done.stderr
    info = _run_json(out)[1]
    assert info["status"] == "completed" and info["signal"] == "SIGTERM"
    assert info["final_eval"] == {"error": "stopped by SIGTERM"}


@pytest.mark.integration
def test_a_stop_signal_during_the_final_evaluation_ends_it_and_keeps_the_run(tmp_path):
    config = pendulum_config(tmp_path)
    out = tmp_path / "out"
    train = subprocess.Popen(
        [rlcli_executable(), "train", str(config), "--set", f"run.output_dir={json.dumps(str(out))}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "400", "NO_COLOR": "1"},
    )
    started = time.monotonic()
    # final.pt is written just before the final evaluation starts; the signal lands as it starts or
    # in its first steps (the test above stops it at a chosen step, in-process).
    while not list(out.glob("*/final.pt")):
        assert train.poll() is None, train.communicate()
        assert time.monotonic() - started < 120
        time.sleep(0.05)
    sent = time.monotonic()
    train.send_signal(signal.SIGTERM)
    _, stderr = train.communicate(timeout=60)
    assert time.monotonic() - sent < 5
    assert train.returncode == 143, stderr
    assert "the final evaluation was stopped; the run itself is complete" in stderr
    info = _run_json(out)[1]
    assert info["status"] == "completed" and info["signal"] == "SIGTERM"
    assert info["final_eval"] == {"error": "stopped by SIGTERM"}
