"""``rlcli show-config`` in this process: the resolved config, as TOML that loads back or as JSON."""

from __future__ import annotations

import json
import sys

from rlcli.config.load import load_config
from rlcli.config.schema import RunConfig
from support.presets import MINIMAL_TOML

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


def test_toml_output_round_trips_through_validate(cli, tmp_path):
    overrides = ["optim.lr=1e-3", "algo.epochs=7", "run.name=round_trip"]
    args = [arg for text in overrides for arg in ("--set", text)]
    shown = cli("show-config", "ppo_cartpole", *args, "--format", "toml", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr == ""
    lines = shown.stdout.splitlines()
    assert "lr = 0.001" in lines and "epochs = 7" in lines and 'name = "round_trip"' in lines
    target = tmp_path / "x.toml"
    target.write_text(shown.stdout, encoding="utf-8")

    checked = cli("validate", "x.toml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "OK" in checked.stdout
    assert load_config(target) == load_config("ppo_cartpole", overrides)


def test_json_output_is_the_resolved_config(cli, tmp_path):
    shown = cli("show-config", "ppo_pendulum", "--format", "json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    # Defaults appear, not only the preset's own keys.
    assert data["run"]["seed"] == 0 and data["timing"]["enabled"] is True
    assert RunConfig.model_validate(data) == load_config("ppo_pendulum")


def test_extends_chain_merges_child_over_parents(cli, tmp_path):
    (tmp_path / "base.toml").write_text(MINIMAL_TOML + '\n[optim]\nname = "adam"\nlr = 0.01\n', encoding="utf-8")
    (tmp_path / "mid").mkdir()
    # extends is relative to the file that says it.
    (tmp_path / "mid" / "mid.toml").write_text(
        'extends = "../base.toml"\n\n[algo]\ngamma = 0.9\nepochs = 4\n', encoding="utf-8"
    )
    (tmp_path / "child.toml").write_text(
        'extends = "mid/mid.toml"\n\n[algo]\nepochs = 2\n\n[optim]\nlr = 0.002\n', encoding="utf-8"
    )
    shown = cli("show-config", "child.toml", "--format", "json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert "extends" not in data
    assert data["algo"]["epochs"] == 2  # child over mid
    assert data["algo"]["gamma"] == 0.9  # mid, kept by the deep merge
    assert data["algo"]["name"] == "ppo" and data["algo"]["minibatch_size"] == 32  # base
    assert data["optim"] == {**data["optim"], "name": "adam", "lr": 0.002}
    assert data["env"]["id"] == "CartPole-v1" and data["env"]["num_envs"] == 4


def test_toml_output_keeps_strings_verbatim(cli, tmp_path):
    shown = cli("show-config", "ppo_cartpole", "--set", 'run.output_dir="runs/:smile:"', cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert tomllib.loads(shown.stdout)["run"]["output_dir"] == "runs/:smile:"
