"""``rlcli datasets make`` and ``rlcli datasets list`` in this process (Typer's runner): small datasets the
offline source reads back and a shipped preset trains on, and the bad input answered before any training.

The recipes' own sizes (a 20k-frame sac_pendulum run, 100k steps a dataset) take minutes: here the training
run is cut short with ``--frames`` and the datasets with ``--steps``; the medium policy's pick, which needs
a run that learns, is in tests/test_datasets.py on a lowered threshold and in the slow layer at full size."""

from __future__ import annotations

import json

import pytest

from rlcli.config.recipes import RECIPES
from rlcli.datasets import load_dataset, open_dataset
from support.cli import assert_bad_input

minari = pytest.importorskip("minari", reason="the minari extra needs Python 3.11+")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A datasets folder where ``rlcli datasets make`` wrote pendulum/expert-v0 (a 304-frame sac_pendulum
    run's policy) and pendulum/random-v0, 450 steps each; and the command's JSON report."""
    from support.cli import invoke

    root = tmp_path_factory.mktemp("made")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MINARI_DATASETS_PATH", str(root))
        result = invoke(
            "datasets", "make", "pendulum/random-v0", "pendulum/expert-v0",
            "--steps", "450", "--frames", "300", "--seed", "1", "--json",
        )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return root, json.loads(result.stdout)


def test_make_writes_the_datasets_asked_and_only_those(made):
    root, report = made
    assert report["root"] == str(root)
    assert sorted(report["datasets"]) == ["pendulum/expert-v0", "pendulum/random-v0"]
    assert not (root / "pendulum" / "medium-v0").exists() and not (root / "pendulum" / "medium-replay-v0").exists()
    (trained,) = report["trained"]
    # 300 frames round up to whole batches of 8; no medium was asked, so none was looked for.
    assert trained["preset"] == "sac_pendulum" and trained["frames"] == 304 and trained["medium_frames"] is None
    for name, written in report["datasets"].items():
        assert written["path"] == str(root / name) and written["steps"] == 450 and written["episodes"] == 3


def test_made_datasets_are_read_by_the_offline_source(made, monkeypatch):
    root, report = made
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    for name in report["datasets"]:
        data = load_dataset(open_dataset(name))
        assert data.env_id == "Pendulum-v1" and len(data.rows) == 450
        assert tuple(data.actions.shape[1:]) == (1,) and float(data.actions.abs().max()) <= 2.0
        returns = data.episode_returns()
        assert abs(float(returns.mean()) - report["datasets"][name]["return_mean"]) < 1e-3


def test_a_shipped_preset_trains_on_the_dataset_made_for_it(cli, made, monkeypatch, tmp_path):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(made[0]))
    result = cli(
        "train", "bc_pendulum_expert", "--out", str(tmp_path),
        "--set", "data.total_steps=40", "--set", "data.steps_per_iteration=20",
        "--set", "eval.episodes=1", "--set", "eval.final_episodes=0", "--set", "run.device=cpu",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "40 gradient steps from" in result.stdout


def test_make_refuses_a_dataset_already_there_and_says_how_to_overwrite(cli, made, monkeypatch):
    root, _ = made
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    before = (root / "pendulum" / "random-v0" / "data" / "main_data.hdf5").stat().st_mtime_ns
    result = cli("datasets", "make", "pendulum/random-v0", "--steps", "10")
    assert_bad_input(
        result, "pendulum/random-v0", "already exists", "rlcli datasets make --overwrite pendulum/random-v0"
    )
    assert (root / "pendulum" / "random-v0" / "data" / "main_data.hdf5").stat().st_mtime_ns == before


def test_make_with_overwrite_replaces_the_dataset(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    assert cli("datasets", "make", "pendulum/random-v0", "--steps", "30").returncode == 0
    result = cli("datasets", "make", "pendulum/random-v0", "--steps", "250", "--overwrite")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "pendulum/random-v0: 250 steps in 2 episodes" in result.stdout and str(tmp_path) in result.stdout
    assert minari.MinariDataset(tmp_path / "pendulum" / "random-v0" / "data").total_steps == 250


def test_an_unknown_recipe_lists_the_known_ones_and_suggests_close_ids(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    output = assert_bad_input(
        cli("datasets", "make", "pendulum/meduim-v0"), "pendulum/meduim-v0", "did you mean 'pendulum/medium-v0'?"
    )
    assert all(name in output for name in RECIPES)
    hosted = assert_bad_input(cli("datasets", "make", "mujoco/hopper/medium-v0"))
    assert "minari download mujoco/hopper/medium-v0" in hosted
    assert_bad_input(cli("datasets", "make"), "name the datasets to make", "pendulum/expert-v0")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_it_cannot_write_is_named_before_any_training(cli, tmp_path, monkeypatch):
    # A file where a folder should be: refused for root too, which permission bits do not stop.
    (tmp_path / "file").write_text("", encoding="utf-8")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "file" / "datasets"))
    result = cli("datasets", "make", "pendulum/expert-v0", "--frames", "1000000")
    assert_bad_input(result, f"datasets folder {tmp_path / 'file' / 'datasets'}", "cannot write there")
    assert "MINARI_DATASETS_PATH" in result.stderr


def test_a_run_that_never_reaches_the_medium_return_writes_nothing(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))
    result = cli("datasets", "make", "pendulum/medium-v0", "pendulum/random-v0", "--frames", "120", "--steps", "10")
    assert_bad_input(result, "--frames", "reached -700", "no medium policy", "raise --frames (the recipe's is 20,000)")
    assert not (tmp_path / "datasets" / "pendulum").exists()


def test_list_prints_every_recipe_and_the_run_behind_them(cli):
    result = cli("datasets", "list")
    assert result.returncode == 0, result.stderr
    for recipe in RECIPES.values():
        assert recipe.id in result.stdout
    assert "20,000 frames of sac_pendulum" in result.stdout and "100,000" in result.stdout


def test_make_help_says_that_only_the_ids_named_are_made(cli):
    result = cli("datasets", "make", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "Only the ids named are made" in text and "name them in one command (or give --all) to train once" in text
