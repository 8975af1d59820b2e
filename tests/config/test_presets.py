"""``config/presets.py``: finding a preset by name or path."""

from __future__ import annotations

import pytest

from rlcli.config.errors import ConfigError
from rlcli.config.presets import available_presets, find_preset
from support.paths import PRESETS, ROOT
from support.presets import MINIMAL_TOML


def only_issue(exc: pytest.ExceptionInfo[ConfigError]):
    (issue,) = exc.value.issues
    return issue


def test_find_preset_by_bare_name_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert find_preset("ppo_cartpole").resolve() == (PRESETS / "ppo_cartpole.toml").resolve()
    assert {p.stem for p in PRESETS.glob("*.toml")} <= set(available_presets())


def test_find_preset_prefers_the_working_folder(tmp_path, monkeypatch):
    local = tmp_path / "presets" / "ppo_cartpole.toml"
    local.parent.mkdir()
    local.write_text(MINIMAL_TOML, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert find_preset("ppo_cartpole").resolve() == local.resolve()


def test_find_preset_takes_an_existing_path_as_is(tmp_path):
    path = tmp_path / "ppo_cartpole"  # no suffix, and named like a preset
    path.write_text(MINIMAL_TOML, encoding="utf-8")
    assert find_preset(path) == path
    assert find_preset(str(path)) == path


def test_find_preset_suggests_close_names():
    with pytest.raises(ConfigError) as exc:
        find_preset("ppo_cartpol")
    message = only_issue(exc).message
    assert "no preset named 'ppo_cartpol'" in message
    assert "did you mean ppo_cartpole" in message
    shipped = sorted(path.stem for path in (ROOT / "presets").glob("*.toml"))
    assert {"a2c_cartpole", "dqn_breakout", "ppo_cartpole", "td3_pendulum"} <= set(shipped)
    assert "known presets: " + ", ".join(shipped) in message


@pytest.mark.parametrize("name", ["missing.toml", "some/dir/missing"])
def test_find_preset_of_missing_path(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as exc:
        find_preset(name)
    assert exc.value.file == name
    assert only_issue(exc).message == "file not found"


def test_find_preset_of_folder(tmp_path, monkeypatch):
    (tmp_path / "conf.toml").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as exc:
        find_preset("conf.toml")
    assert only_issue(exc).message == "is a folder, not a TOML file"
