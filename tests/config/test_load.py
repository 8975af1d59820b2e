"""``config/load.py``: ``--set`` parsing, merging, ``extends`` chains and error locations."""

from __future__ import annotations

import math

import pytest

from rlcli.config.errors import ConfigError
from rlcli.config.load import (
    apply_override,
    deep_merge,
    load_config,
    load_layers,
    parse_override,
)
from support.presets import MINIMAL_TOML


def only_issue(exc: pytest.ExceptionInfo[ConfigError]):
    (issue,) = exc.value.issues
    return issue


# parse_override


@pytest.mark.parametrize(
    ("text", "keys", "value"),
    [
        ("algo.gamma=0.9", ["algo", "gamma"], 0.9),
        ("optim.lr=1e-3", ["optim", "lr"], 0.001),
        ("collector.total_frames=1_000_000", ["collector", "total_frames"], 1_000_000),
        ("run.seed=-5", ["run", "seed"], -5),
        ("env.normalize_reward=true", ["env", "normalize_reward"], True),
        ("network.hidden_sizes=[32, 32]", ["network", "hidden_sizes"], [32, 32]),
        ("env.kwargs={g = 9.8, wind = true}", ["env", "kwargs"], {"g": 9.8, "wind": True}),
        # A bare word that is not a TOML literal is a string.
        ("env.id=Pendulum-v1", ["env", "id"], "Pendulum-v1"),
        ("run.device=cuda:0", ["run", "device"], "cuda:0"),
        ("run.output_dir=runs/exp1", ["run", "output_dir"], "runs/exp1"),
        ('env.id="CartPole-v1"', ["env", "id"], "CartPole-v1"),
        ("env.id='CartPole-v1'", ["env", "id"], "CartPole-v1"),
        # A quoted word that looks like a number stays a string.
        ('run.name="123"', ["run", "name"], "123"),
        (" algo . gamma = 0.5 ", ["algo", "gamma"], 0.5),
        # Only the first "=" splits key from value.
        ('env.kwargs={a = "x=y"}', ["env", "kwargs"], {"a": "x=y"}),
    ],
)
def test_parse_override(text, keys, value):
    assert parse_override(text) == (keys, value)


def test_parse_override_keeps_toml_specials():
    keys, value = parse_override("run.stop_at_return=inf")
    assert keys == ["run", "stop_at_return"] and math.isinf(value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("optim.lr", "expected KEY=VALUE"),
        ("=1", "malformed key ''"),
        ("algo..gamma=1", "malformed key 'algo..gamma'"),
        ("algo gamma=1", "malformed key 'algo gamma'"),
        ("algo.gamma=[1,2", "cannot parse value '[1,2'"),
        ("algo.gamma=", "cannot parse value ''"),
        ("run.name=two words", "cannot parse value 'two words'"),
        ('run.name="unterminated', "cannot parse value '\"unterminated'"),
    ],
)
def test_parse_override_errors(text, fragment):
    with pytest.raises(ConfigError) as exc:
        parse_override(text)
    issue = only_issue(exc)
    assert fragment in issue.message
    assert issue.source == f"--set {text}"
    assert exc.value.file is None


def test_parse_override_error_names_the_field():
    with pytest.raises(ConfigError) as exc:
        parse_override("algo.gamma=[1,2")
    assert only_issue(exc).path == "algo.gamma"


def test_apply_override_creates_tables():
    data = {"algo": {"name": "ppo"}}
    apply_override(data, ["algo", "gamma"], 0.9, "--set algo.gamma=0.9")
    apply_override(data, ["env", "kwargs", "g"], 9.8, "--set env.kwargs.g=9.8")
    assert data == {"algo": {"name": "ppo", "gamma": 0.9}, "env": {"kwargs": {"g": 9.8}}}


def test_apply_override_into_a_value_fails():
    data = {"env": {"id": "CartPole-v1"}}
    with pytest.raises(ConfigError) as exc:
        apply_override(data, ["env", "id", "x"], 1, "--set env.id.x=1")
    issue = only_issue(exc)
    assert issue.message == "env.id is a value, not a table"
    assert (issue.path, issue.source) == ("env.id.x", "--set env.id.x=1")


# deep_merge


def test_deep_merge_child_wins_and_tables_merge():
    parent = {"algo": {"name": "ppo", "gamma": 0.99, "epochs": 10}, "env": {"id": "CartPole-v1"}, "tags": [1, 2]}
    child = {"algo": {"gamma": 0.9}, "optim": {"lr": 0.1}, "tags": [3]}
    assert deep_merge(parent, child) == {
        "algo": {"name": "ppo", "gamma": 0.9, "epochs": 10},
        "env": {"id": "CartPole-v1"},
        "optim": {"lr": 0.1},
        # Lists are values: replaced, never concatenated.
        "tags": [3],
    }


def test_deep_merge_nested_tables_and_type_changes():
    parent = {"env": {"kwargs": {"a": 1, "b": {"c": 2, "d": 3}}}, "x": {"y": 1}}
    child = {"env": {"kwargs": {"b": {"c": 20}}}, "x": 5}
    assert deep_merge(parent, child) == {"env": {"kwargs": {"a": 1, "b": {"c": 20, "d": 3}}}, "x": 5}


def test_deep_merge_leaves_inputs_unchanged():
    parent = {"algo": {"name": "ppo", "gamma": 0.99}}
    child = {"algo": {"gamma": 0.9}}
    merged = deep_merge(parent, child)
    merged["algo"]["epochs"] = 3
    assert parent == {"algo": {"name": "ppo", "gamma": 0.99}}
    assert child == {"algo": {"gamma": 0.9}}


# load_layers and load_config


def test_load_layers_chain_is_child_first(write_toml):
    base = write_toml("base.toml", MINIMAL_TOML)
    child = write_toml("sub/child.toml", 'extends = "../base.toml"\n[algo]\ngamma = 0.9\n')
    data, chain = load_layers(child)
    assert chain == [child.resolve(), base.resolve()]
    assert "extends" not in data
    assert data["algo"] == {"name": "ppo", "minibatch_size": 32, "gamma": 0.9}


def test_load_layers_rejects_self_extension(write_toml):
    path = write_toml("self.toml", 'extends = "self.toml"\n')
    with pytest.raises(ConfigError) as exc:
        load_layers(path)
    assert "extends cycle" in only_issue(exc).message


@pytest.mark.parametrize("value", ["5", '""', '["a.toml"]'])
def test_extends_must_be_a_path_string(write_toml, value):
    path = write_toml("bad.toml", f"extends = {value}\n")
    with pytest.raises(ConfigError) as exc:
        load_layers(path)
    issue = only_issue(exc)
    assert issue.path == "extends" and "extends must be a path string" in issue.message


def test_load_config_applies_overrides_after_extends(write_toml):
    write_toml("base.toml", MINIMAL_TOML)
    child = write_toml("child.toml", 'extends = "base.toml"\n[algo]\ngamma = 0.9\n')
    cfg = load_config(child, ["algo.gamma=0.8", "env.id=Acrobot-v1", "network.hidden_sizes=[16]"])
    assert cfg.algo.gamma == 0.8
    assert cfg.env.id == "Acrobot-v1"
    assert cfg.network.hidden_sizes == [16]
    assert cfg.algo.minibatch_size == 32


def test_load_config_locates_errors_by_line(write_toml, monkeypatch):
    path = write_toml("bad.toml", MINIMAL_TOML.replace('name = "ppo"', 'name = "ppo"\ngamma = 1.5'))
    monkeypatch.chdir(path.parent)
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert exc.value.file == "bad.toml"
    issue = only_issue(exc)
    assert (issue.path, issue.source, issue.line) == ("algo.gamma", "bad.toml", 7)
    assert issue.render() == "algo.gamma: 1.5 is out of range; allowed: 0 to 1  [bad.toml:7]"


def test_load_config_locates_override_errors_at_the_override(write_toml):
    path = write_toml("ok.toml", MINIMAL_TOML)
    with pytest.raises(ConfigError) as exc:
        load_config(path, ["algo.gamma=2"])
    issue = only_issue(exc)
    assert (issue.path, issue.source, issue.line) == ("algo.gamma", "--set algo.gamma=2", None)


def test_load_config_reports_every_problem(write_toml):
    text = MINIMAL_TOML.replace("num_envs = 4", "num_envs = 0").replace('name = "ppo"', 'name = "ppo"\ngama = 0.9')
    with pytest.raises(ConfigError) as exc:
        load_config(write_toml("bad.toml", text))
    assert {issue.path for issue in exc.value.issues} == {"env.num_envs", "algo.gama"}
    (gama,) = [i for i in exc.value.issues if i.path == "algo.gama"]
    assert "did you mean gamma?" in gama.message


def test_load_config_syntax_error_has_line_and_column(write_toml):
    path = write_toml("bad.toml", '[env]\nid = "CartPole-v1"\nnum_envs = 8 8\n')
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    issue = only_issue(exc)
    assert (issue.line, issue.column) == (3, 14)
    assert issue.message.startswith("TOML syntax error: ") and "(at line" not in issue.message


def test_load_config_of_non_utf8_file(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('[run]\nname = "caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert "cannot read file" in only_issue(exc).message


def test_error_in_a_parent_is_located_in_the_parent(write_toml, monkeypatch):
    parent = write_toml("parent.toml", MINIMAL_TOML.replace('name = "ppo"', 'name = "ppo"\ngamma = 1.5'))
    child = write_toml("child.toml", 'extends = "parent.toml"\n\n[algo]\nepochs = 5\n')
    monkeypatch.chdir(parent.parent)
    with pytest.raises(ConfigError) as exc:
        load_config(child)
    issue = only_issue(exc)
    assert (issue.source, issue.line) == ("parent.toml", 7)
