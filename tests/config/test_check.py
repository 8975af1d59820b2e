"""``config/check.py``: which files ``validate`` reads and what it reports for each."""

from __future__ import annotations

from rlcli.config.check import check_files, expand_paths
from support.presets import MINIMAL_TOML


def test_expand_paths_recurses_and_skips_bases(write_toml, tmp_path):
    write_toml("b.toml", MINIMAL_TOML)
    write_toml("a.toml", MINIMAL_TOML)
    write_toml("_base.toml", MINIMAL_TOML)
    write_toml("sub/c.toml", MINIMAL_TOML)
    write_toml("notes.txt", "not a config")
    assert [p.relative_to(tmp_path).as_posix() for p in expand_paths([tmp_path])] == ["a.toml", "b.toml", "sub/c.toml"]
    # A file named explicitly is checked even when it starts with "_".
    assert expand_paths([tmp_path / "_base.toml"]) == [tmp_path / "_base.toml"]


def test_check_files_reports_each_file(write_toml, tmp_path, monkeypatch):
    write_toml("good.toml", MINIMAL_TOML)
    write_toml("bad.toml", MINIMAL_TOML.replace("num_envs = 4", "num_envs = 0"))
    monkeypatch.chdir(tmp_path)
    good, bad, missing = check_files(["good.toml", "bad.toml", "missing.toml"])
    assert (good.file, good.ok, good.summary) == ("good.toml", True, "ppo on CartPole-v1")
    assert (bad.file, bad.ok) == ("bad.toml", False)
    assert [(i.path, i.line) for i in bad.issues] == [("env.num_envs", 3)]
    assert (missing.file, missing.ok) == ("missing.toml", False)
    assert missing.issues[0].message == "file not found"


def test_build_catches_what_loading_cannot(write_toml, tmp_path, monkeypatch):
    write_toml("blackjack.toml", MINIMAL_TOML.replace("CartPole-v1", "Blackjack-v1"))
    monkeypatch.chdir(tmp_path)
    (loaded,) = check_files(["blackjack.toml"])
    assert loaded.ok
    (built,) = check_files(["blackjack.toml"], build=True)
    (issue,) = built.issues
    assert issue.path == "env.id"
    assert "Blackjack-v1 has observation space Tuple(" in issue.message
    assert "supported observation spaces: Box, Discrete, Dict" in issue.message


def test_build_summary(write_toml, tmp_path, monkeypatch):
    write_toml("ok.toml", MINIMAL_TOML.replace("[algo]", '[run]\ndevice = "cpu"\n\n[algo]'))
    monkeypatch.chdir(tmp_path)
    (result,) = check_files(["ok.toml"], build=True)
    assert result.ok, result.issues
    assert result.summary.startswith("ppo on CartPole-v1: observation Box(4,), action Discrete(2), ")
    assert " parameters, cpu; encoders: encoder flat -> " in result.summary
    assert "; observation normalization off; no action masks (auto); threads auto: acting 1 (" in result.summary
    assert result.summary.endswith("; precision fp32")
