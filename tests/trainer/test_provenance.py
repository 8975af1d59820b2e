"""``run.json``'s provenance: the config's git commit, looked up without letting the
repository's own git config run a command."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from rlcli.trainer.provenance import git_commit, provenance

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(folder, *args):
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def test_commit_and_dirty_flag(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "a.toml").write_text("x = 1\n", encoding="utf-8")
    git(tmp_path, "add", "a.toml")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert git_commit(tmp_path) == {"commit": head.stdout.strip(), "dirty": False}
    (tmp_path / "a.toml").write_text("x = 2\n", encoding="utf-8")
    assert git_commit(tmp_path)["dirty"] is True
    info = provenance(3, overrides=["--seed 3"], config_file=tmp_path / "a.toml")
    assert info["git"]["commit"] == head.stdout.strip() and info["seed"] == 3


def test_a_repository_cannot_make_git_run_a_command(tmp_path):
    git(tmp_path, "init", "-q")
    marker = tmp_path / "PWNED"
    git(tmp_path, "config", "core.fsmonitor", f"touch {marker}")
    (tmp_path / "a.toml").write_text("x = 1\n", encoding="utf-8")
    git_commit(tmp_path)
    assert not marker.exists()


def test_outside_a_repository_there_is_no_commit(tmp_path):
    assert git_commit(tmp_path / "nowhere") is None
