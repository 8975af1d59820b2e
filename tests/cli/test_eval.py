"""``rlcli eval`` in this process (Typer's runner) on run folders that ``rlcli train`` made.

The session's PPO CartPole run (``on_policy_run``: final.pt and checkpoints at 2,048 and 4,096
frames) serves the table, --json, checkpoint paths and every bad input, copied where a test damages
or reconfigures it; the session's pixel run on the test package's Dict corridor (no rgb_array
rendering, ``rlcli_test_envs`` recorded in run.json) serves the env-package and render-mode
refusals. Every bad input must exit 2 without a traceback and leave the run folder as it was.

Integration: an mp4 really written (imageio-ffmpeg encodes it in an ffmpeg child process), on a
run of the painted corridor, and one bad input as the shell sees it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from support.cli import assert_bad_input
from support.paths import env_packages_importable
from support.presets import MINIMAL_TOML, require_extra
from support.run_folders import snapshot
from support.runs import train_cli

HEADERS = ("episodes", "mean return", "std", "min", "max", "mean length")


@pytest.fixture(scope="module")
def painted_run(tmp_path_factory) -> Path:
    """A run on the corridor that renders rgb_array frames, trained with ``--env-package rlcli_test_envs``."""
    env_packages_importable()
    base = tmp_path_factory.mktemp("corridor")
    config = base / "corridor.toml"
    config.write_text(MINIMAL_TOML.replace('"CartPole-v1"', '"RlcliTest/PaintedCorridor-v0"'), encoding="utf-8")
    return train_cli(base / "runs", config, "--env-package", "rlcli_test_envs", "-q").folder


def test_eval_of_a_run_folder_prints_the_table_and_changes_nothing(cli, on_policy_run):
    folder = on_policy_run.folder
    before = snapshot(folder, with_folders=True)
    result = cli("eval", folder, "--episodes", "3")
    after = snapshot(folder, with_folders=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    header = next(line for line in result.stdout.splitlines() if "mean return" in line)
    assert [h for h in HEADERS if h in header] == list(HEADERS)
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("│"))
    assert row.split("│")[1].strip() == "3"
    assert "ppo on CartPole-v1: deterministic, seed 1000000" in result.stdout
    assert f"checkpoint: {folder / 'final.pt'}" in result.stdout
    assert after == before


def test_on_a_terminal_the_episodes_show_on_a_transient_bar(cli, on_policy_run, monkeypatch):
    import io

    from rich.console import Console

    from rlcli.cli import render

    terminal = Console(file=io.StringIO(), force_terminal=True, record=True, width=120)
    monkeypatch.setattr(render, "console", terminal)
    result = cli("eval", on_policy_run.folder, "--episodes", "4")
    assert result.returncode == 0, result.stdout + result.stderr
    shown = terminal.export_text()
    # A transient bar: what it last drew depends on its refresh, the total does not.
    assert "evaluating episodes" in shown and "/4" in shown
    assert "evaluating" not in result.stdout
    # --json prints the report alone, with no bar anywhere.
    quiet = Console(file=io.StringIO(), force_terminal=True, record=True, width=120)
    monkeypatch.setattr(render, "console", quiet)
    assert cli("eval", on_policy_run.folder, "--episodes", "2", "--json").returncode == 0
    assert "evaluating" not in quiet.export_text()


def test_json_report_of_a_final_pt_path(cli, on_policy_run):
    folder = on_policy_run.folder
    result = cli("eval", folder / "final.pt", "--episodes", "3", "--json", "--stochastic", "--seed", "7")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["episodes"] == 3 and len(report["returns"]) == 3
    # CartPole pays 1 per step.
    assert report["returns"] == [float(n) for n in report["lengths"]]
    assert report["checkpoint"] == str(folder / "final.pt")
    assert (report["seed"], report["deterministic"], report["video"]) == (7, False, None)
    again = json.loads(cli("eval", folder, "--episodes", "3", "--json", "--stochastic", "--seed", "7").stdout)
    assert again["returns"] == report["returns"]


def test_a_folder_without_final_pt_uses_its_newest_checkpoint_and_a_checkpoint_path_finds_its_run(
    cli, on_policy_run, copy_run
):
    folder = copy_run(on_policy_run)
    (folder / "final.pt").unlink()
    # The run's two checkpoints (2,048 and 4,096 frames) and an older one that must not be read.
    older, newest = sorted((folder / "checkpoints").glob("ckpt-*.pt"))
    (folder / "checkpoints" / "ckpt-000000000512.pt").write_bytes(b"not read: an older checkpoint")
    report = json.loads(cli("eval", folder, "--episodes", "1", "--json").stdout)
    assert report["checkpoint"] == str(newest)
    report = json.loads(cli("eval", newest, "--episodes", "1", "--json").stdout)
    assert (report["checkpoint"], report["run_folder"]) == (str(newest), str(folder))


@pytest.mark.parametrize(
    ("edit", "fragments"),
    [
        (
            lambda text: text.replace("hidden_sizes = [64, 64]", "hidden_sizes = [32]"),
            (
                "its weights do not fit the networks this config builds",
                "policy.net.0.weight is [64, 4] in the checkpoint but [32, 4] in this config's networks",
            ),
        ),
        (
            lambda text: text.replace('id = "CartPole-v1"', 'id = "Acrobot-v1"').replace(
                '"vector_entry_point"', '"sync"'
            ),
            ("it was trained on 'CartPole-v1', not on this config's env 'Acrobot-v1' (env.id)",),
        ),
    ],
    ids=["network", "env"],
)
def test_weights_from_another_config_are_refused(cli, on_policy_run, copy_run, edit, fragments):
    folder = copy_run(on_policy_run, edit)
    before = snapshot(folder, with_folders=True)
    assert_bad_input(cli("eval", folder), f"checkpoint {folder / 'final.pt'}", *fragments)
    assert snapshot(folder, with_folders=True) == before


def test_a_truncated_final_pt_is_refused(cli, on_policy_run, copy_run):
    folder = copy_run(on_policy_run)
    final = folder / "final.pt"
    with final.open("r+b") as file:
        file.truncate(final.stat().st_size // 2)
    before = snapshot(folder, with_folders=True)
    assert_bad_input(cli("eval", folder), f"checkpoint {final}: truncated or corrupt")
    assert snapshot(folder, with_folders=True) == before


def test_a_missing_path_is_refused(cli, tmp_path):
    assert_bad_input(cli("eval", tmp_path / "no-such-run"), "no such file or folder")


@pytest.mark.integration
def test_a_missing_path_exits_2_without_a_traceback_as_the_shell_sees_it(rlcli, tmp_path):
    assert_bad_input(rlcli("eval", tmp_path / "no-such-run"), "no such file or folder")


@pytest.mark.integration
def test_video_of_the_first_episode_is_a_real_mp4(cli, painted_run, tmp_path):
    require_extra("imageio")
    require_extra("imageio_ffmpeg")
    before = snapshot(painted_run, with_folders=True)
    video = tmp_path / "out.mp4"
    result = cli("eval", painted_run, "--episodes", "2", "--video", video, "--env-package", "rlcli_test_envs")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"video: {video}" in result.stdout
    head = video.read_bytes()[:64]
    assert video.stat().st_size > 200 and head[4:8] == b"ftyp"
    # Written through a temporary file that is gone now.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.mp4"]
    assert snapshot(painted_run, with_folders=True) == before


def test_video_of_an_env_without_rgb_array_names_its_render_modes(cli, pixel_run, tmp_path):
    require_extra("imageio")
    require_extra("imageio_ffmpeg")
    env_packages_importable()
    before = snapshot(pixel_run.folder, with_folders=True)
    assert_bad_input(
        cli("eval", pixel_run.folder, "--video", tmp_path / "out.mp4", "--env-package", "rlcli_test_envs"),
        "RlcliTest/DictCorridor-v0 cannot render rgb_array frames; its render modes: none",
    )
    assert list(tmp_path.iterdir()) == [] and snapshot(pixel_run.folder, with_folders=True) == before


def test_video_without_the_extra_says_what_to_install(cli, on_policy_run, tmp_path, monkeypatch):
    # None in sys.modules makes the import fail, as on an install without the extra.
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    video = tmp_path / "out.mp4"
    assert_bad_input(
        cli("eval", on_policy_run.folder, "--video", video), "--video needs the video extra: pip install 'rlcli[video]'"
    )
    assert not video.exists()


def test_video_into_a_missing_folder_is_refused(cli, on_policy_run, tmp_path):
    require_extra("imageio")
    require_extra("imageio_ffmpeg")
    assert_bad_input(
        cli("eval", on_policy_run.folder, "--video", tmp_path / "nowhere" / "out.mp4"),
        f"folder {tmp_path / 'nowhere'} does not exist",
    )


def test_a_run_whose_env_package_is_not_given_names_the_flag(cli, pixel_run):
    """run.json only names the module; importing code stays the choice of the person running eval."""
    env_packages_importable()
    before = snapshot(pixel_run.folder, with_folders=True)
    assert_bad_input(
        cli("eval", pixel_run.folder),
        "its env was registered by --env-package rlcli_test_envs; give the same flags again",
    )
    assert snapshot(pixel_run.folder, with_folders=True) == before
