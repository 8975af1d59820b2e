"""``[env] action_mask`` through the CLI: every bad input it can meet (exit 2, one screen, the file,
the field, what was wrong and what is allowed), and masked Taxi runs of PPO and DQN trained, resumed
and evaluated in this process."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli import assert_bad_input
from support.paths import ROOT, env_packages_importable
from support.run_folders import only_run_folder, rows_of

PPO = """\
[env]
id = "{env}"
num_envs = 2
action_mask = "{mask}"
{extra}
[algo]
name = "{algo}"
{algo_extra}
[collector]
frames_per_batch = 32
total_frames = 64
"""


def config(write_toml, env: str, mask: str, algo: str = "ppo", extra: str = "", algo_extra: str = "") -> Path:
    if algo == "ppo" and not algo_extra:
        algo_extra = "minibatch_size = 16"
    text = PPO.format(env=env, mask=mask, algo=algo, extra=extra, algo_extra=algo_extra)
    return write_toml("masks.toml", text)


@pytest.fixture(autouse=True)
def _test_envs():
    env_packages_importable()


def bad(cli, path: Path, *fragments: str) -> str:
    output = assert_bad_input(cli("validate", "--build", path, "--env-package", "rlcli_test_envs"), *fragments)
    assert str(path) in output and "env.action_mask" in output
    return output


def test_info_masks_on_an_env_that_gives_none(cli, write_toml):
    bad(cli, config(write_toml, "CartPole-v1", "info"), 'CartPole-v1 gives no info["action_mask"] at its first reset')


def test_observation_masks_on_an_env_without_the_key(cli, write_toml):
    bad(
        cli,
        config(write_toml, "CartPole-v1", "observation"),
        "has no 'action_mask' key (looked in the observation space)",
    )


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [("size = 5", "is [5] int8; a mask for Discrete(6) actions is [6]"), ('dtype = "float32"', "[6] float32")],
)
def test_a_mask_of_the_wrong_shape_or_dtype(cli, write_toml, kwargs, said):
    extra = f"[env.kwargs]\n{kwargs}\n"
    output = bad(cli, config(write_toml, "RlcliTest/TaxiMask-v0", "info", extra=extra), said)
    assert "bool or integer 0/1" in output


@pytest.mark.parametrize(
    ("algo", "algo_extra", "said"),
    [
        # PPO masks Discrete and MultiDiscrete actions: only the env's Box actions, met at build, refuse it.
        ("ppo", "", "action masks need Discrete or 1-D MultiDiscrete actions"),
        # SAC masks none: refused from its declared capabilities, before any env is made.
        ("sac", "learning_starts = 16\nbatch_size = 16", "sac cannot use action masks (applies none)"),
    ],
)
def test_masks_on_box_actions(cli, write_toml, algo, algo_extra, said):
    bad(
        cli,
        config(write_toml, "Pendulum-v1", "info", algo=algo, algo_extra=algo_extra),
        said,
        "ppo, a2c, reinforce, trpo, dqn, qrdqn",
    )


def test_masks_with_an_algorithm_that_cannot_use_them(cli, write_toml):
    text = """\
[env]
id = "Taxi-v4"
action_mask = "info"
[algo]
name = "bc"
[data]
dataset = "rlcli/taxi-nowhere-v0"
steps_per_iteration = 10
total_steps = 100
"""
    bad(
        cli,
        write_toml("bc.toml", text),
        "bc cannot use action masks (learns from a dataset)",
        "the algorithms that can: ppo, a2c, reinforce, trpo, dqn, qrdqn;",
    )


def test_multidiscrete_actions_with_an_algorithm_that_cannot_take_them(cli, write_toml):
    path = config(write_toml, "RlcliTest/MaskedPicks-v0", "auto", algo="dqn", algo_extra="learning_starts = 16")
    output = assert_bad_input(cli("validate", "--build", path, "--env-package", "rlcli_test_envs"), "MultiDiscrete")
    assert "the algorithms that learn from envs with such actions: ppo, a2c, reinforce, trpo" in output


def test_multibinary_actions_train_with_ppo(cli, write_toml, tmp_path):
    path = config(write_toml, "RlcliTest/Bits-v0", "auto")
    result = cli("train", path, "--env-package", "rlcli_test_envs", "--out", tmp_path / "runs", "-q")
    assert result.returncode == 0, result.stdout + result.stderr


def test_validate_build_says_where_masks_come_from(cli):
    result = cli("validate", "--build", ROOT / "presets" / "dqn_taxi_masked.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'action masks from info["action_mask"] (info)' in " ".join(result.stdout.split()).replace("│ ", "")


# Masked Taxi runs, trained here on tiny budgets.


# Tiny budgets, with schedules that do not stretch with total_frames (a resume raises it): the
# learning rate held, and DQN's epsilon at its end once the warm-up is over.
SHORT = {
    "ppo_taxi_masked": (
        "collector.total_frames=4096",
        "collector.frames_per_batch=512",
        "env.num_envs=4",
        "optim.lr_schedule=constant",
    ),
    "dqn_taxi_masked": (
        "collector.total_frames=2048",
        "algo.learning_starts=256",
        "algo.replay.capacity=4096",
        "optim.lr_schedule=constant",
        "algo.exploration_fraction=0",
        "algo.epsilon_end=0.1",
    ),
}


def train(cli, out: Path, preset: str, *settings: str, env_package: str | None = None) -> Path:
    args = ["train", preset, "--out", out, "-q", "--set", "eval.final_episodes=2"]
    args += [] if env_package is None else ["--env-package", env_package]
    for setting in (*SHORT[preset], *settings):
        args += ["--set", setting]
    result = cli(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return only_run_folder(out)


@pytest.mark.parametrize("preset", list(SHORT))
def test_a_masked_taxi_run_resumes_exactly(cli, tmp_path, preset):
    whole = train(cli, tmp_path / "whole", preset)
    half = dict(setting.split("=") for setting in SHORT[preset])["collector.total_frames"]
    first = train(cli, tmp_path / "halves", preset, f"collector.total_frames={int(half) // 2}")
    resumed = cli("train", "--resume", first, "--set", f"collector.total_frames={half}", "-q")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert rows_of(first) == rows_of(whole)


def test_a_masked_taxi_run_takes_no_invalid_action_and_evaluates_under_masks(cli, tmp_path):
    folder = train(
        cli,
        tmp_path / "runs",
        "ppo_taxi_masked",
        "env.id=RlcliTest/CountedTaxi-v0",
        "env.max_episode_steps=50",
        env_package="rlcli_test_envs",
    )
    result = cli("eval", folder, "--episodes", "3", "--env-package", "rlcli_test_envs")
    assert result.returncode == 0, result.stdout + result.stderr
