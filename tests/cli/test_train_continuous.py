"""``rlcli train`` and ``validate`` with the continuous-control presets, as a user runs them.

The default layer runs the command in this process (the ``cli`` fixture) on small networks and
budgets; the presets' own smoke runs, at their shipped sizes, are ``integration``.
"""

from __future__ import annotations

import pytest

from support.cli import assert_bad_input, assert_exit, rlcli_process
from support.imports import package_hidden
from support.run_folders import load_final, no_run_folder, only_run_folder, read_csv, read_run_json

PRESETS = ["sac_pendulum", "td3_pendulum", "ddpg_pendulum", "redq_pendulum"]

# The presets on 16x16 networks and minibatches of 16, without the final evaluation (100 of Pendulum's
# 200-step episodes): at the presets' own sizes a run of a few hundred frames takes seconds.
SMALL = ["--set", "network.hidden_sizes=[16, 16]", "--set", "algo.batch_size=16", "--set", "eval.final_episodes=0"]


def check_smoke_run(out, preset: str, rows_expected: int) -> None:
    folder = only_run_folder(out, preset)
    header, rows = read_csv(folder / "metrics.csv")
    assert len(rows) == rows_expected and "loss/critic" in header and "loss/actor" in header
    assert rows[0]["loss/critic"] == "" and float(rows[-1]["loss/critic"]) >= 0
    assert read_run_json(folder)["status"] == "completed"
    agent = load_final(folder)["agent"]
    assert any(name.startswith("critic_target.") for name in agent)


@pytest.mark.parametrize("preset", PRESETS)
def test_each_preset_trains_on_small_networks(cli, tmp_path, preset):
    out = tmp_path / "runs"
    # 4 iterations of 8 frames: the first 2 warm up, the last 2 learn.
    result = cli(
        "train",
        preset,
        "--set",
        "collector.total_frames=32",
        "--set",
        "algo.learning_starts=16",
        *SMALL,
        "--quiet",
        "--out",
        out,
    )
    assert_exit(result, 0)
    check_smoke_run(out, preset, 4)


@pytest.mark.integration
@pytest.mark.parametrize("preset", PRESETS)
def test_smoke_run_of_each_preset(tmp_path, preset):
    out = tmp_path / "runs"
    result = rlcli_process(
        "train",
        preset,
        "--set",
        "collector.total_frames=240",
        "--set",
        "algo.learning_starts=200",
        "--quiet",
        "--out",
        out,
    )
    assert_exit(result, 0)
    check_smoke_run(out, preset, 30)


@pytest.mark.parametrize("name", ["sac", "td3", "ddpg"])
def test_continuous_control_on_a_discrete_env_is_bad_input(cli, tmp_path, name):
    config = tmp_path / f"{name}_cartpole.toml"
    config.write_text(f'[env]\nid = "CartPole-v1"\n\n[algo]\nname = "{name}"\n', encoding="utf-8")
    result = cli("validate", "--build", config.name, cwd=tmp_path)
    assert_bad_input(
        result,
        config.name,
        "algo.name",
        "CartPole-v1",
        "action space Discrete(2)",
        f"{name} does not support",
        "supported action spaces: 1-D Box",
    )


@pytest.mark.parametrize(
    ("preset", "override", "field", "fragment"),
    [
        ("redq_pendulum", "algo.num_critics=1", "algo.critic_subset", "must not exceed num_critics (1)"),
        ("td3_pendulum", "algo.policy_delay=0", "algo.policy_delay", "0 is out of range; allowed: >= 1"),
        ("sac_pendulum", "algo.policy_delay=0", "algo.policy_delay", "0 is out of range; allowed: >= 1"),
        ("td3_pendulum", "algo.noise_scale=-0.1", "algo.noise_scale", "-0.1 is out of range; allowed: 0 to 10"),
        ("ddpg_pendulum", "algo.noise_scale=-0.1", "algo.noise_scale", "-0.1 is out of range; allowed: 0 to 10"),
        ("td3_pendulum", "algo.target_noise=-1", "algo.target_noise", "-1 is out of range; allowed: 0 to 10"),
        ("ddpg_pendulum", "algo.policy_delay=2", "algo.policy_delay", "ddpg"),
    ],
)
def test_out_of_range_continuous_control_settings_are_bad_input(cli, tmp_path, preset, override, field, fragment):
    out = tmp_path / "runs"
    result = cli("train", preset, "--set", override, "--out", out)
    assert_bad_input(result, field, fragment)
    no_run_folder(out)


def test_sac_halfcheetah_builds_and_runs_a_few_steps(cli, tmp_path):
    pytest.importorskip("mujoco", reason="the mujoco extra: pip install -e '.[mujoco]'")
    out = tmp_path / "runs"
    # No final evaluation: 100 of HalfCheetah's 1,000-step episodes take most of a minute.
    result = cli(
        "train",
        "sac_halfcheetah",
        "--set",
        "collector.total_frames=48",
        "--set",
        "algo.learning_starts=32",
        "--set",
        "algo.batch_size=16",
        "--set",
        "eval.final_episodes=0",
        "--quiet",
        "--out",
        out,
    )
    assert_exit(result, 0)
    folder = only_run_folder(out, "sac_halfcheetah")
    header, rows = read_csv(folder / "metrics.csv")
    assert len(rows) == 6 and float(rows[-1]["stats/gradient_steps"]) == 8


def test_sac_halfcheetah_without_mujoco_says_what_to_install(cli):
    # Importing mujoco fails within the block, as where it is not installed, and gymnasium's MuJoCo
    # envs are imported again.
    with package_hidden("mujoco", "gymnasium.envs.mujoco"):
        result = cli("validate", "--build", "presets/sac_halfcheetah.toml")
    assert_bad_input(result, "sac_halfcheetah.toml", "HalfCheetah-v5", "pip install", "mujoco")
