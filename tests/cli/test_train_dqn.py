"""``rlcli train`` and ``validate`` with DQN, the off-policy path of the one loop, as a user runs them
(in this process, through the ``cli`` fixture)."""

from __future__ import annotations

import pytest

from support.cli import assert_bad_input, assert_exit, invoke
from support.run_folders import (
    load_final,
    no_run_folder,
    only_run_folder,
    read_csv,
    read_jsonl,
    read_run_json,
)

SHORT = ["--set", "collector.total_frames=2048", "--set", "algo.learning_starts=512"]


@pytest.fixture(scope="module")
def dqn(tmp_path_factory):
    out = tmp_path_factory.mktemp("dqn") / "runs"
    result = invoke("train", "dqn_cartpole", *SHORT, "--quiet", "--out", out)
    return result, out


def test_smoke_run_completes_with_every_column_from_the_first_row(dqn):
    result, out = dqn
    assert_exit(result, 0)
    folder = only_run_folder(out, "dqn_cartpole")
    header, rows = read_csv(folder / "metrics.csv")
    for column in (
        "loss/q",
        "stats/epsilon",
        "stats/q_mean",
        "optim/lr",
        "time/update.sample_ms",
        "time/update.target_ms",
        "time/update.extend_ms",
    ):
        assert column in header, column
    assert [int(r["frames"]) for r in rows] == [256 * i for i in range(1, 9)]
    # The warm-up row (256 of the 512 frames of random actions) has no loss yet: the
    # column is there, empty. Learning starts in the iteration that completes the 512.
    assert rows[0]["loss/q"] == "" and float(rows[0]["stats/gradient_steps"]) == 0
    assert all(float(r["loss/q"]) >= 0 for r in rows[1:])
    assert float(rows[0]["stats/epsilon"]) == 1.0 > float(rows[-1]["stats/epsilon"])
    jsonl = read_jsonl(folder / "metrics.jsonl")
    assert jsonl[0]["loss/q"] is None and jsonl[-1]["loss/q"] is not None
    status = read_run_json(folder)
    assert status["status"] == "completed" and status["frames"] == 2048
    payload = load_final(folder)
    # The target network is part of the agent, saved with it.
    assert any(name.startswith("target.") for name in payload["agent"])
    assert payload["algo_state"]["replay"]["buffer"]["size"] > 1500


def test_memmap_replay_lives_in_the_run_folder(cli, tmp_path):
    out = tmp_path / "runs"
    # Two iterations and no final evaluation: the files are there once the buffer holds a transition.
    result = cli(
        "train",
        "dqn_cartpole",
        "--set",
        "collector.total_frames=512",
        "--set",
        "algo.learning_starts=256",
        "--set",
        'algo.replay.storage="memmap"',
        "--set",
        "eval.final_episodes=0",
        "--quiet",
        "--out",
        out,
    )
    assert_exit(result, 0)
    folder = only_run_folder(out, "dqn_cartpole")
    files = sorted(p.name for p in (folder / "replay").iterdir())
    # The preset's 3-step returns store their bootstrap discount beside the transition.
    assert files == sorted(
        f"{key}.memmap" for key in ("observation", "next_observation", "action", "reward", "terminated", "discount")
    )


def test_dqn_on_a_continuous_action_env_is_bad_input(cli, tmp_path):
    config = tmp_path / "dqn_pendulum.toml"
    config.write_text('[env]\nid = "Pendulum-v1"\n\n[algo]\nname = "dqn"\n', encoding="utf-8")
    result = cli("validate", "--build", config.name, cwd=tmp_path)
    assert_bad_input(
        result,
        "dqn_pendulum.toml",
        "algo.name",
        "Pendulum-v1",
        "action space Box",
        "dqn does not support",
        "supported action spaces: Discrete",
    )


def test_a_replay_buffer_larger_than_memory_is_bad_input_before_allocating(cli, tmp_path):
    out = tmp_path / "runs"
    result = cli("train", "dqn_cartpole", "--set", "algo.replay.capacity=2000000000", "--out", out)
    output = assert_bad_input(result, "algo.replay.capacity", "2,000,000,000 transitions needs", "is free")
    assert "GiB" in output
    no_run_folder(out)


def test_an_unwritable_memmap_directory_is_bad_input(cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    out = tmp_path / "runs"
    result = cli(
        "train",
        "dqn_cartpole",
        "--set",
        'algo.replay.storage="memmap"',
        "--set",
        f'algo.replay.directory="{(blocker / "replay").as_posix()}"',
        "--out",
        out,
    )
    assert_bad_input(result, "algo.replay.directory", "cannot write memmap files")
    no_run_folder(out)


@pytest.mark.parametrize(
    ("override", "field", "fragment"),
    [
        ("algo.replay.alpha=1.5", "algo.replay.alpha", "1.5 is out of range; allowed: 0 to 1"),
        ("algo.replay.beta=-0.1", "algo.replay.beta", "-0.1 is out of range; allowed: 0 to 1"),
        ("algo.replay.beta_frames=0", "algo.replay.beta_frames", "0 is out of range; allowed: >= 1"),
        ("algo.learning_starts=200000", "algo.learning_starts", "is larger than the run's 100,096 frames"),
        ("algo.batch_size=200000", "algo.batch_size", "must not exceed algo.replay.capacity"),
    ],
)
def test_out_of_range_off_policy_settings_are_bad_input(cli, tmp_path, override, field, fragment):
    out = tmp_path / "runs"
    result = cli("train", "dqn_cartpole", "--set", override, "--out", out)
    assert_bad_input(result, field, fragment)
    no_run_folder(out)
