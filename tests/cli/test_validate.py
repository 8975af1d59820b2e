"""``rlcli validate`` in this process: every shipped preset passes and builds, every file in
tests/broken_configs fails as expected. One test runs the real command (integration layer):
``validate --json`` of broken files exits 2 with no traceback as the shell sees it."""

from __future__ import annotations

import json

import pytest

from rlcli.config.load import load_config
from support.cli import assert_bad_input, invoke
from support.offline import random_dataset
from support.paths import BROKEN_CONFIGS, PRESET_FILES
from support.presets import BUILDABLE_PRESETS, MINIMAL_TOML, PRESETS_TO_BUILD

# file -> (dotted path, message fragment, line of the offending key or None).
EXPECTED = {
    "syntax_error.toml": ("", "TOML syntax error", 5),
    "unknown_section.toml": ("optimizer", "unknown section [optimizer]; did you mean [optim]?", 8),
    "unknown_key.toml": ("algo.clip_epsilom", "unknown key; did you mean clip_epsilon?", 7),
    "other_algo_key.toml": ("algo.clip_epsilon", "'clip_epsilon' belongs to ppo, ippo, mappo, not a2c", 7),
    "wrong_type.toml": (
        "env.num_envs",
        'expected an integer such as 16 (no quotes, no decimal point), got the string "eight"',
        4,
    ),
    "negative_lr.toml": ("optim.lr", "-0.001 is out of range; allowed: > 0 and <= 1", 9),
    "gamma_above_one.toml": ("algo.gamma", "1.5 is out of range; allowed: 0 to 1", 7),
    "zero_envs.toml": ("env.num_envs", "0 is out of range; allowed: 1 to 4096", 4),
    "unknown_algo.toml": ("algo", "unknown algorithm 'muzero'; known algorithms: ppo, a2c, reinforce", 5),
    "unknown_env.toml": ("env.id", "unknown gymnasium env id 'CartPole-v2'; did you mean 'CartPole-v1'", 3),
    "module_env.toml": ("env.id", "module-qualified env id 'os:system' is not allowed", 3),
    "missing_env.toml": ("env", "missing required section [env]", None),
    "extends_cycle_a.toml": ("", "extends cycle:", None),
    "extends_cycle_b.toml": ("", "extends cycle:", None),
    "extends_missing.toml": ("extends", "extends 'no_such_parent.toml': file not found", None),
    "extends_bad_override.toml": ("algo.gamma", "2.0 is out of range; allowed: 0 to 1", 5),
    "frames_not_multiple.toml": (
        "collector.frames_per_batch",
        "frames_per_batch (100) must be a multiple of env.num_envs (8)",
        11,
    ),
    "minibatch_too_big.toml": (
        "algo.minibatch_size",
        "minibatch_size (512) must not exceed collector.frames_per_batch (256)",
        8,
    ),
    "total_below_batch.toml": (
        "collector.total_frames",
        "total_frames (100) must be at least frames_per_batch (256)",
        12,
    ),
}


def table_status(output: str) -> dict[str, str]:
    """File -> status from the rows of validate's rich table (continuation rows have no file)."""
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in output.splitlines() if "│" in line]
    return {cells[0]: cells[1] for cells in rows if len(cells) == 3 and cells[0] not in ("", "file")}


def test_expected_table_covers_the_broken_folder():
    checked = {p.name for p in BROKEN_CONFIGS.glob("*.toml") if not p.name.startswith("_")}
    assert checked == set(EXPECTED)


@pytest.fixture(scope="module")
def broken_report():
    result = invoke("validate", "--json", "tests/broken_configs")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return json.loads(result.stdout)


def test_json_report_fails_the_whole_folder(broken_report):
    assert broken_report["ok"] is False
    files = [entry["file"] for entry in broken_report["files"]]
    # Files starting with "_" are bases for extends, never checked alone.
    assert sorted(files) == sorted(f"tests/broken_configs/{name}" for name in EXPECTED)
    assert all(not entry["ok"] and entry["errors"] for entry in broken_report["files"])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_json_report_locates_each_error(broken_report, name):
    path, fragment, line = EXPECTED[name]
    (entry,) = [e for e in broken_report["files"] if e["file"] == f"tests/broken_configs/{name}"]
    matching = [e for e in entry["errors"] if e["path"] == path and fragment in e["message"]]
    assert matching, entry["errors"]
    if line is not None:
        assert (matching[0]["source"], matching[0]["line"]) == (f"tests/broken_configs/{name}", line)


@pytest.mark.integration
def test_the_real_command_reports_json_and_exits_2_without_a_traceback(rlcli):
    # What the shell sees: the status and output of the real process, not of Typer's runner.
    files = ["tests/broken_configs/unknown_key.toml", "tests/broken_configs/wrong_type.toml"]
    result = rlcli("validate", "--json", *files)
    assert_bad_input(result)
    report = json.loads(result.stdout)
    assert report["ok"] is False and [e["file"] for e in report["files"]] == files
    assert [e["path"] for e in report["files"][0]["errors"]] == ["algo.clip_epsilom"]


def test_human_report_marks_every_broken_file_invalid(cli):
    result = cli("validate", "tests/broken_configs")
    output = assert_bad_input(result)
    status = table_status(output)
    assert status == {f"tests/broken_configs/{name}": "INVALID" for name in EXPECTED}
    assert "OK" not in output.replace("INVALID", "")
    assert "TOML syntax error" in output and "belongs to ppo, ippo, mappo, not a2c" in output


def test_presets_are_valid(cli):
    result = cli("validate", "presets/")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert table_status(output) == {f"presets/{p.name}": "OK" for p in PRESET_FILES}


@pytest.fixture(scope="module")
def preset_datasets(tmp_path_factory):
    """A folder holding the offline presets' datasets by id: stand-ins of random actions under those ids."""
    root = tmp_path_factory.mktemp("preset-datasets")
    offline = [cfg for cfg in map(load_config, BUILDABLE_PRESETS) if cfg.offline]
    for name, env_id in {cfg.data.dataset: cfg.env.id for cfg in offline}.items():
        random_dataset(env_id, name=name, root=root)
    return root


# One preset a test: the Atari presets each take seconds to build their ALE envs.
@pytest.mark.parametrize("preset", PRESETS_TO_BUILD)
def test_presets_build(cli, monkeypatch, request, preset):
    if load_config(preset).offline:
        monkeypatch.setenv("MINARI_DATASETS_PATH", str(request.getfixturevalue("preset_datasets")))
    result = cli("validate", "--build", "--json", f"presets/{preset.name}")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True
    (entry,) = report["files"]
    assert entry["file"] == f"presets/{preset.name}"
    # The build summary names the spaces, the parameter count and each encoder.
    assert "observation " in entry["summary"] and "parameters" in entry["summary"], entry
    assert "encoders: " in entry["summary"] and "observation normalization" in entry["summary"], entry
    assert "stand-in" not in entry["summary"], entry


def test_an_offline_preset_builds_on_a_stand_in_where_its_dataset_is_absent(cli, tmp_path, monkeypatch):
    # A CI machine has no datasets: --build checks the env and the networks on random transitions with the
    # env's spaces, says so, and training still refuses.
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    result = cli("validate", "--build", "--json", "presets/iql_pendulum_medium.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    (entry,) = json.loads(result.stdout)["files"]
    assert "parameters" in entry["summary"], entry
    assert "'pendulum/medium-v0' is not on this machine" in entry["summary"], entry
    assert "stand-in" in entry["summary"] and str(tmp_path) in entry["summary"], entry
    train = cli("train", "presets/iql_pendulum_medium.toml", "--set", f"run.output_dir={tmp_path / 'runs'}")
    assert_bad_input(train, "data.dataset", "no dataset 'pendulum/medium-v0'")
    assert not (tmp_path / "runs").exists()


def test_build_rejects_an_env_whose_observation_space_is_unsupported(cli, tmp_path):
    text = MINIMAL_TOML.replace("CartPole-v1", "Blackjack-v1")
    (tmp_path / "blackjack.toml").write_text(text, encoding="utf-8")
    result = cli("validate", "--build", "blackjack.toml", cwd=tmp_path)
    output = assert_bad_input(result, "blackjack.toml", "INVALID", "Blackjack-v1", "Tuple(", "supported")
    assert "supported observation spaces: Box, Discrete, Dict" in output


def test_set_applies_to_every_file_validated(cli):
    good = cli(
        "validate",
        "presets/ppo_cartpole.toml",
        "presets/dqn_cartpole.toml",
        "--set",
        "env.num_envs=4",
        "--set",
        "collector.frames_per_batch=1024",
    )
    assert good.returncode == 0, good.stdout + good.stderr
    bad = cli("validate", "presets/ppo_cartpole.toml", "--set", "env.num_envs=0")
    assert_bad_input(bad, "presets/ppo_cartpole.toml", "INVALID", "env.num_envs", "--set env.num_envs=0")
