"""A preset trained, evaluated from its final.pt and resumed with ``rlcli train``, ``eval`` and ``--resume``, as
a user runs them (in this process, through the ``cli`` fixture), on small networks and budgets: QR-DQN's, TQC's,
TRPO's and CrossQ's presets, whose agents save more than their policy (targets, running statistics)."""

from __future__ import annotations

import pytest

from rlcli.algos import ALGORITHMS
from support.cli import assert_exit, invoke
from support.run_folders import load_final, only_run_folder, read_csv, read_run_json

# (preset, frames, overrides): a few iterations each, learning from the second on.
RUNS = {
    "qrdqn_cartpole": (1024, ["algo.learning_starts=256", "algo.batch_size=32"]),
    "tqc_pendulum": (64, ["algo.learning_starts=16", "algo.batch_size=16"]),
    "trpo_cartpole": (2048, ["algo.value_epochs=2"]),
    "crossq_pendulum": (64, ["algo.learning_starts=16", "algo.batch_size=16"]),
}
# What each agent holds beside its networks: targets for QR-DQN and TQC, none for CrossQ, whose batch
# renormalization keeps running statistics instead.
SAVED = {
    "qrdqn_cartpole": ("target.", None),
    "tqc_pendulum": ("critic_target.", None),
    "trpo_cartpole": ("value.", "target"),
    "crossq_pendulum": ("running_mean", "target"),
}


def train_args(preset: str, out, *extra: str) -> list:
    frames, overrides = RUNS[preset]
    args = ["train", preset, "--set", f"collector.total_frames={frames}", "--set", "network.hidden_sizes=[16, 16]"]
    for item in [*overrides, "eval.final_episodes=2", *extra]:
        args += ["--set", item]
    return [*args, "--quiet", "--out", out]


@pytest.mark.parametrize("preset", sorted(RUNS))
def test_each_preset_trains_evaluates_and_saves_its_agent(cli, tmp_path, preset):
    out = tmp_path / "runs"
    assert_exit(cli(*train_args(preset, out)), 0)
    folder = only_run_folder(out, preset)
    header, rows = read_csv(folder / "metrics.csv")
    name = preset.split("_")[0]
    assert set(ALGORITHMS[name].metrics) <= set(header)
    assert rows[-1]["loss/total"] != "" and float(rows[-1]["optim/lr"]) > 0
    status = read_run_json(folder)
    assert status["status"] == "completed" and status["final_eval"]["episodes"] == 2
    keys = list(load_final(folder)["agent"])
    present, absent = SAVED[preset]
    assert any(present in key for key in keys), keys
    assert absent is None or not any(absent in key for key in keys), keys
    result = cli("eval", folder, "--episodes", "2")
    assert_exit(result, 0)


@pytest.mark.parametrize("preset", ["tqc_pendulum", "crossq_pendulum", "trpo_cartpole"])
def test_a_resumed_run_ends_where_an_uninterrupted_one_does(tmp_path, preset):
    """Half the budget, then --resume to the whole: the same metrics as one run of the whole budget
    (the optimizers, generators, running statistics and, off-policy, the replay are in the checkpoint)."""
    frames, _ = RUNS[preset]
    whole, halves = tmp_path / "whole", tmp_path / "halves"
    every = ["checkpoint.every_frames=" + str(frames // 2), "timing.enabled=false"]
    assert_exit(invoke(*train_args(preset, whole, *every)), 0)
    assert_exit(invoke(*train_args(preset, halves, *every, f"collector.total_frames={frames // 2}")), 0)
    first = only_run_folder(halves, preset)
    assert_exit(invoke("train", "--resume", first, "--set", f"collector.total_frames={frames}", "--quiet"), 0)
    columns = ("frames", "loss/total", "optim/lr")
    expected = [[row[c] for c in columns] for row in read_csv(only_run_folder(whole, preset) / "metrics.csv")[1]]
    resumed = [[row[c] for c in columns] for row in read_csv(first / "metrics.csv")[1]]
    assert resumed == expected
