"""``rlcli eval`` run as the real command on run folders that ``rlcli train`` made.

Two runs are trained once per module: PPO on CartPole (the table, --json, checkpoint paths and
every bad input) and PPO on the test package's corridors (videos; the corridors need
``tests/envpkg`` on PYTHONPATH, and their runs record ``rlcli_test_envs`` in run.json).
Every bad input must exit 2 without a traceback and leave the run folder as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import MINIMAL_TOML, ROOT, assert_bad_input, require_extra, rlcli_executable

ENV_PACKAGES = ROOT / "tests" / "envpkg"
HEADERS = ("episodes", "mean return", "std", "min", "max", "mean length")


def run_cli(*args, pythonpath: tuple[Path, ...] = (), timeout: float = 180) -> subprocess.CompletedProcess:
    """``rlcli ARGS`` with ``pythonpath`` in front of PYTHONPATH, on a wide colourless console."""
    parts = [str(p) for p in pythonpath] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1", "TERM": "dumb", "PYTHONPATH": os.pathsep.join(parts)}
    return subprocess.run([rlcli_executable(), *map(str, args)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def only_run_folder(out: Path) -> Path:
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``folder`` with its size and modification time."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))} | {".": (0, folder.stat().st_mtime_ns)}


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cartpole")
    result = run_cli("train", "ppo_cartpole", "--set", "collector.total_frames=2048", "--out", out, "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    return only_run_folder(out)


@pytest.fixture
def copy_of(cartpole_run, tmp_path):
    """A copy of the CartPole run folder, to damage or reconfigure."""
    def copy(edit_config=None) -> Path:
        folder = tmp_path / "copy"
        shutil.copytree(cartpole_run, folder)
        if edit_config is not None:
            config = folder / "config.toml"
            config.write_text(edit_config(config.read_text(encoding="utf-8")), encoding="utf-8")
        return folder
    return copy


@pytest.fixture(scope="module")
def corridor_runs(tmp_path_factory) -> dict[str, Path]:
    """A run on each corridor, trained with ``--env-package rlcli_test_envs``."""
    runs = {}
    for env_id in ("RlcliTest/PaintedCorridor-v0", "RlcliTest/Corridor-v0"):
        base = tmp_path_factory.mktemp("corridor")
        config = base / "corridor.toml"
        config.write_text(MINIMAL_TOML.replace('"CartPole-v1"', f'"{env_id}"'), encoding="utf-8")
        out = base / "runs"
        result = run_cli("train", config, "--env-package", "rlcli_test_envs", "--out", out, "-q",
                         pythonpath=(ENV_PACKAGES,))
        assert result.returncode == 0, result.stdout + result.stderr
        runs[env_id] = only_run_folder(out)
    return runs


def test_eval_of_a_run_folder_prints_the_table_and_changes_nothing(cartpole_run):
    before = snapshot(cartpole_run)
    result = run_cli("eval", cartpole_run, "--episodes", "3")
    after = snapshot(cartpole_run)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    header = next(line for line in result.stdout.splitlines() if "mean return" in line)
    assert [h for h in HEADERS if h in header] == list(HEADERS)
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("│"))
    assert row.split("│")[1].strip() == "3"
    assert "ppo on CartPole-v1: deterministic, seed 1000000" in result.stdout
    assert f"checkpoint: {cartpole_run / 'final.pt'}" in result.stdout
    assert after == before


def test_json_report_of_a_final_pt_path(cartpole_run):
    result = run_cli("eval", cartpole_run / "final.pt", "--episodes", "3", "--json", "--stochastic", "--seed", "7")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["episodes"] == 3 and len(report["returns"]) == 3
    # CartPole pays 1 per step.
    assert report["returns"] == [float(n) for n in report["lengths"]]
    assert report["checkpoint"] == str(cartpole_run / "final.pt")
    assert (report["seed"], report["deterministic"], report["video"]) == (7, False, None)
    again = json.loads(run_cli("eval", cartpole_run, "--episodes", "3", "--json", "--stochastic",
                               "--seed", "7").stdout)
    assert again["returns"] == report["returns"]


def test_a_folder_without_final_pt_uses_its_newest_checkpoint_and_a_checkpoint_path_finds_its_run(copy_of):
    folder = copy_of()
    (folder / "final.pt").unlink()
    (newest,) = (folder / "checkpoints").glob("ckpt-*.pt")
    (folder / "checkpoints" / "ckpt-000000000512.pt").write_bytes(b"not read: an older checkpoint")
    report = json.loads(run_cli("eval", folder, "--episodes", "1", "--json").stdout)
    assert report["checkpoint"] == str(newest)
    report = json.loads(run_cli("eval", newest, "--episodes", "1", "--json").stdout)
    assert (report["checkpoint"], report["run_folder"]) == (str(newest), str(folder))


@pytest.mark.parametrize(("edit", "fragments"), [
    (lambda text: text.replace("hidden_sizes = [64, 64]", "hidden_sizes = [32]"),
     ("its weights do not fit the networks this config builds",
      "policy.net.0.weight is [64, 4] in the checkpoint but [32, 4] in this config's networks")),
    (lambda text: text.replace('id = "CartPole-v1"', 'id = "Acrobot-v1"').replace('"vector_entry_point"', '"sync"'),
     ("it was trained on 'CartPole-v1', not on this config's env 'Acrobot-v1' (env.id)",)),
], ids=["network", "env"])
def test_weights_from_another_config_are_refused(copy_of, edit, fragments):
    folder = copy_of(edit)
    before = snapshot(folder)
    assert_bad_input(run_cli("eval", folder), f"checkpoint {folder / 'final.pt'}", *fragments)
    assert snapshot(folder) == before


def test_a_truncated_final_pt_is_refused(copy_of):
    folder = copy_of()
    final = folder / "final.pt"
    with final.open("r+b") as file:
        file.truncate(final.stat().st_size // 2)
    before = snapshot(folder)
    assert_bad_input(run_cli("eval", folder), f"checkpoint {final}: truncated or corrupt")
    assert snapshot(folder) == before


def test_a_missing_path_is_refused(tmp_path):
    assert_bad_input(run_cli("eval", tmp_path / "no-such-run"), "no such file or folder")


def test_video_of_the_first_episode_is_a_real_mp4(corridor_runs, tmp_path):
    require_extra("imageio")
    require_extra("imageio_ffmpeg")
    folder = corridor_runs["RlcliTest/PaintedCorridor-v0"]
    before = snapshot(folder)
    video = tmp_path / "out.mp4"
    result = run_cli("eval", folder, "--episodes", "2", "--video", video, "--env-package", "rlcli_test_envs",
                     pythonpath=(ENV_PACKAGES,))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"video: {video}" in result.stdout
    head = video.read_bytes()[:64]
    assert video.stat().st_size > 200 and head[4:8] == b"ftyp"
    # Written through a temporary file that is gone now.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.mp4"]
    assert snapshot(folder) == before


def test_video_of_an_env_without_rgb_array_names_its_render_modes(corridor_runs, tmp_path):
    require_extra("imageio")
    require_extra("imageio_ffmpeg")
    folder = corridor_runs["RlcliTest/Corridor-v0"]
    before = snapshot(folder)
    assert_bad_input(run_cli("eval", folder, "--video", tmp_path / "out.mp4", "--env-package", "rlcli_test_envs",
                             pythonpath=(ENV_PACKAGES,)),
                     "RlcliTest/Corridor-v0 cannot render rgb_array frames; its render modes: none")
    assert list(tmp_path.iterdir()) == [] and snapshot(folder) == before


def test_video_without_the_extra_says_what_to_install(cartpole_run, tmp_path):
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "imageio_ffmpeg.py").write_text('raise ImportError("hidden by the test")\n')
    video = tmp_path / "out.mp4"
    assert_bad_input(run_cli("eval", cartpole_run, "--video", video, pythonpath=(blocked,)),
                     "--video needs the video extra: pip install 'rlcli[video]'")
    assert not video.exists()


def test_video_into_a_missing_folder_is_refused(cartpole_run, tmp_path):
    require_extra("imageio")
    require_extra("imageio_ffmpeg")
    assert_bad_input(run_cli("eval", cartpole_run, "--video", tmp_path / "nowhere" / "out.mp4"),
                     f"folder {tmp_path / 'nowhere'} does not exist")


def test_a_run_whose_env_package_is_not_given_names_the_flag(corridor_runs):
    """run.json only names the module; importing code stays the choice of the person running eval."""
    folder = corridor_runs["RlcliTest/PaintedCorridor-v0"]
    before = snapshot(folder)
    assert_bad_input(run_cli("eval", folder, pythonpath=(ENV_PACKAGES,)),
                     "its env was registered by --env-package rlcli_test_envs; give the same flags again")
    assert snapshot(folder) == before
