"""``rlcli plot RUN_DIR ...`` in this process (Typer's runner) on run folders that ``rlcli train`` wrote.

The seeds group is made by ``rlcli train --seeds 0-1 --jobs 1`` in this process, with each seed's
``rlcli train`` child process replaced by the same command line run here (``in_process_seeds``):
the group folder, its run folders and seeds.json come from rlcli's own code. A group of real child
processes is plotted by tests/cli/test_seeds.py. Integration: what a fresh interpreter imports.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from rlcli.plot import DPI, FIGSIZE_IN
from support.cli import assert_bad_input, invoke
from support.images import png_size
from support.paths import ROOT
from support.presets import require_extra

FRAMES = ["--set", "collector.total_frames=1024"]


class _Ended:
    """What ``rlcli.runtime.seed_runs`` reads of a seed's Popen, for a seed that already ran to its end."""

    def __init__(self, returncode: int):
        self.returncode = returncode

    def poll(self) -> int:
        return self.returncode

    def send_signal(self, sig: int) -> None:
        pass


def _run_seed_here(command: list[str], *, stdout, **_popen) -> _Ended:
    # command is [python, "-c", CHILD, "train", ...]: rlcli's own arguments follow the child's code.
    done = invoke(*command[3:])
    stdout.write(done.stdout + done.stderr)
    return _Ended(done.returncode)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """An output folder with one run of seed 5 and a ``--seeds 0-1`` group folder, 1,024 frames each."""
    out = tmp_path_factory.mktemp("plot") / "runs"
    done = invoke("train", "ppo_cartpole", *FRAMES, "--out", out, "--quiet", "--seed", "5")
    assert done.returncode == 0, done.stdout + done.stderr
    import rlcli.runtime.seed_runs

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            rlcli.runtime.seed_runs, "subprocess", SimpleNamespace(Popen=_run_seed_here, STDOUT=subprocess.STDOUT)
        )
        done = invoke("train", "ppo_cartpole", *FRAMES, "--out", out, "--quiet", "--seeds", "0-1", "--jobs", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.mark.parametrize("flags", [[], ["--x", "time", "--band", "iqr"]], ids=["frames-minmax", "time-iqr"])
def test_plot_of_an_output_folder_draws_the_single_run_and_the_seeds_median(cli, runs, tmp_path, flags):
    require_extra("matplotlib")
    png = tmp_path / "curve.png"
    done = cli("plot", runs, "-o", png, *flags)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert png_size(png) == (int(FIGSIZE_IN[0] * DPI), int(FIGSIZE_IN[1] * DPI))
    assert f"wrote {png}: 2 line(s) from 3 run(s)" in output
    assert "ppo_cartpole (ppo on CartPole-v1), median of 2 seeds" in output
    assert "ppo_cartpole (ppo on CartPole-v1), seed 5" in output


def test_plot_writes_curve_png_in_the_working_folder_by_default(cli, runs, tmp_path):
    require_extra("matplotlib")
    group = next(runs.glob("*-seeds"))
    done = cli("plot", group, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 line(s) from 2 run(s)" in done.stdout
    png_size(tmp_path / "curve.png")


def test_an_unknown_column_exits_2_listing_the_columns(cli, runs, tmp_path):
    require_extra("matplotlib")
    output = assert_bad_input(
        cli("plot", runs, "-o", tmp_path / "curve.png", "--y", "eval/return_mean"),
        "--y eval/return_mean: no run has this column; available: iteration, frames, "
        "wall_time_s, fps, rollout/episode_return_mean",
    )
    assert "time/iteration_ms" in output
    assert not (tmp_path / "curve.png").exists()


def test_a_missing_run_folder_exits_2_naming_it(cli, tmp_path):
    require_extra("matplotlib")
    missing = tmp_path / "no-such-run"
    assert_bad_input(cli("plot", missing, "-o", tmp_path / "curve.png"), f"RUN_DIR {missing}: does not exist")


def test_a_folder_without_runs_exits_2_naming_it(cli, tmp_path):
    require_extra("matplotlib")
    assert_bad_input(cli("plot", tmp_path), f"RUN_DIR {tmp_path}: holds no metrics.csv")


def test_without_matplotlib_it_says_what_to_install(cli, tmp_path, monkeypatch):
    # None in sys.modules makes the import fail, as on an install without the extra.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert_bad_input(cli("plot", tmp_path), "rlcli plot needs matplotlib: pip install 'rlcli[plot]'")


@pytest.mark.integration
def test_plot_never_loads_torch(runs, tmp_path):
    require_extra("matplotlib")
    probe = (
        "import atexit, sys; atexit.register(lambda: sys.stderr.write("
        "'LOADED:' + ','.join(m for m in ('torch', 'rlcli.run') if m in sys.modules) + '\\n')); "
        "sys.argv = ['rlcli', *sys.argv[1:]]; from rlcli.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "plot", runs, "-o", tmp_path / "curve.png"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "LOADED:\n" in done.stderr
