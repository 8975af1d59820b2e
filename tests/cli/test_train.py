"""``rlcli train``: run folders, metrics, exit codes and console output.

The default layer runs the command in this process (the ``cli`` fixture) with ``--out`` in a
temporary folder; the smoke tests read the session's ``on_policy_run`` (``rlcli train
ppo_cartpole`` for 4,096 frames). The ``integration`` tests start the installed ``rlcli``
console script where the process is what is tested: Ctrl-C, output piped to another process, a
bad input's exit status as the shell sees it, seeds trained side by side, a preset's smoke run.
"""

from __future__ import annotations

import json
import math
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from support.cli import assert_exit, cli_env, command, invoke, output_of, rlcli_process, sigint_default
from support.imports import package_hidden
from support.paths import ROOT
from support.run_folders import (
    assert_iterations,
    load_final,
    metrics_by_process,
    no_run_folder,
    only_run_folder,
    read_csv,
    read_jsonl,
    read_run_json,
)
from support.runs import ON_POLICY_FRAMES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

# Columns every PPO or A2C run writes.
REQUIRED_COLUMNS = (
    "iteration",
    "frames",
    "wall_time_s",
    "fps",
    "rollout/episode_return_mean",
    "rollout/episode_length_mean",
    "loss/policy",
    "loss/value",
    "loss/entropy",
    "optim/lr",
    "time/collect_ms",
    "time/collect.env_step_ms",
    "time/collect.policy_ms",
    "time/update.advantage_ms",
    "time/update_ms",
    "time/update.forward_ms",
    "time/update.backward_ms",
    "time/update.optimizer_ms",
    "time/log_ms",
    "time/iteration_ms",
)

# Cursor movement, line erasing and cursor hiding: what a live progress bar emits.
# Colour codes (ESC [ ... m) are not cursor movement and are allowed.
CURSOR_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-HJKSTfhlsu]")

TIMING_TITLE = re.compile(r"^iteration (\d+)/(\d+)\s*$", re.MULTILINE)

NAN_ERROR = re.compile(r"iteration (\d+): (loss/[\w.]+) is (nan|inf|-inf)")


def test_smoke_run_folder_holds_every_file(on_policy_run):
    names = {p.name for p in on_policy_run.folder.iterdir()}
    assert {"config.toml", "metrics.csv", "metrics.jsonl", "final.pt", "run.json"} <= names
    # Atomic writes go through hidden temporary files, which must not be left behind.
    assert not [n for n in names if n.startswith(".")], names


def test_smoke_config_toml_validates_and_reloads_to_the_same_config(cli, on_policy_run):
    from rlcli.config.load import load_config

    saved = on_policy_run.folder / "config.toml"
    assert_exit(cli("validate", saved), 0)
    expected = load_config(
        "ppo_cartpole",
        [
            f"collector.total_frames={ON_POLICY_FRAMES}",
            "checkpoint.every_frames=2048",
            f"run.output_dir={json.dumps(str(on_policy_run.out))}",
        ],
    )
    assert load_config(saved) == expected


def test_smoke_metrics_have_one_row_per_iteration(on_policy_run):
    header, rows = read_csv(on_policy_run.folder / "metrics.csv")
    assert set(REQUIRED_COLUMNS) <= set(header), sorted(set(REQUIRED_COLUMNS) - set(header))
    assert_iterations(rows, count=8, frames_per_batch=512)
    for row in rows:
        for column in ("loss/policy", "loss/value", "loss/entropy", "optim/lr"):
            assert math.isfinite(float(row[column])), (row["iteration"], column, row[column])
        for column in header:
            if column.startswith("time/"):
                assert float(row[column]) >= 0, (column, row[column])
    assert float(rows[0]["optim/lr"]) == pytest.approx(3e-3)

    records = read_jsonl(on_policy_run.folder / "metrics.jsonl")
    assert set(REQUIRED_COLUMNS) <= set(records[0])
    assert_iterations(records, count=8, frames_per_batch=512)
    for row, record in zip(rows, records):
        for column in ("loss/policy", "loss/value", "loss/entropy"):
            assert float(row[column]) == record[column], column


def test_smoke_final_checkpoint_loads_with_weights_only(on_policy_run):
    payload = load_final(on_policy_run.folder)
    assert payload["frames"] == ON_POLICY_FRAMES == 4096
    assert payload["iteration"] == 8


def test_smoke_run_json_reports_the_finished_run(on_policy_run):
    status = read_run_json(on_policy_run.folder)
    assert status["status"] in ("completed", "solved")
    assert status["frames"] == 4096
    assert status["iterations"] == 8
    assert status["error"] is None
    assert status["device"] == "cpu"


def test_smoke_prints_the_run_folder_at_start_and_end(on_policy_run):
    result, folder = on_policy_run.result, on_policy_run.folder
    lines = [line.rstrip() for line in result.stdout.splitlines() if line.strip()]
    assert str(folder) in lines[0], lines[0]
    assert str(folder) in lines[-1], lines[-1]
    assert re.search(r"^run (completed|solved)", result.stdout, re.MULTILINE), result.stdout


def check_trained_to_budget(out: Path, preset: str, frames_per_batch: int, iterations: int) -> None:
    folder = only_run_folder(out, preset)
    header, rows = read_csv(folder / "metrics.csv")
    assert set(REQUIRED_COLUMNS) <= set(header), sorted(set(REQUIRED_COLUMNS) - set(header))
    assert_iterations(rows, count=iterations, frames_per_batch=frames_per_batch)
    assert_iterations(read_jsonl(folder / "metrics.jsonl"), count=iterations, frames_per_batch=frames_per_batch)
    status = read_run_json(folder)
    assert status["status"] in ("completed", "solved")
    assert status["frames"] == frames_per_batch * iterations
    assert status["iterations"] == iterations
    assert load_final(folder)["frames"] == frames_per_batch * iterations


@pytest.mark.parametrize(
    ("preset", "overrides", "frames_per_batch", "iterations"),
    [
        ("a2c_cartpole", ["collector.total_frames=6400"], 320, 20),
        # PPO on a Box action space, on a budget for the default layer: 2 iterations of 512 frames, 2 epochs,
        # a final evaluation of 2 of Pendulum's 200-step episodes. The preset's own sizes are its smoke run below.
        (
            "ppo_pendulum",
            ["collector.total_frames=1024", "collector.frames_per_batch=512", "algo.epochs=2", "eval.final_episodes=2"],
            512,
            2,
        ),
    ],
)
def test_other_presets_train_to_their_frame_budget(cli, tmp_path, preset, overrides, frames_per_batch, iterations):
    out = tmp_path / "runs"
    sets = [arg for text in overrides for arg in ("--set", text)]
    assert_exit(cli("train", preset, *sets, "--quiet", "--out", out), 0)
    check_trained_to_budget(out, preset, frames_per_batch, iterations)


@pytest.mark.integration
def test_ppo_pendulum_smoke_run_trains_to_its_frame_budget(tmp_path):
    """The shipped preset's batch of 4,096 frames and 10 epochs, final evaluation included."""
    out = tmp_path / "runs"
    result = rlcli_process(
        "train",
        "ppo_pendulum",
        "--set",
        "collector.total_frames=8192",
        "--set",
        "collector.frames_per_batch=4096",
        "--quiet",
        "--out",
        out,
    )
    assert_exit(result, 0)
    check_trained_to_budget(out, "ppo_pendulum", 4096, 2)


def assert_same_seed_alike_and_another_not(metrics: dict[str, tuple]) -> None:
    """Runs "seed3a" and "seed3b" wrote the same metrics; "seed4" the same columns and other losses."""
    assert metrics["seed3a"] == metrics["seed3b"]
    columns, rows3 = metrics["seed3a"]
    columns4, rows4 = metrics["seed4"]
    assert columns4 == columns
    losses = [i for i, c in enumerate(columns) if c.startswith("loss/")]
    assert any(a[i] != b[i] for a, b in zip(rows3, rows4) for i in losses), "seed 4 trained exactly like seed 3"


@pytest.mark.integration
def test_same_seed_in_processes_side_by_side_gives_the_same_metrics(tmp_path):
    """What no in-process run can show: separate interpreters (their own hash seeds, thread pools and
    import order), running at once, train one seed alike."""
    metrics = metrics_by_process(
        tmp_path, "ppo_cartpole", {"seed3a": 3, "seed3b": 3, "seed4": 4}, "--set", "collector.total_frames=4096"
    )
    assert len(metrics["seed3a"][1]) == 8
    assert_same_seed_alike_and_another_not(metrics)


def test_flags_win_over_set_and_quiet_prints_only_the_summary(cli, tmp_path):
    out = tmp_path / "runs"
    ignored = tmp_path / "ignored"
    result = cli(
        "train",
        "ppo_cartpole",
        "--set",
        "run.seed=1",
        "--seed",
        "7",
        # On this CPU-only run a losing --device would make the run exit 2.
        "--set",
        'run.device="cuda:7"',
        "--device",
        "cpu",
        "--set",
        f"run.output_dir={json.dumps(str(ignored))}",
        "--out",
        out,
        # Without --quiet these would print a timing table every iteration.
        "--set",
        "timing.every=1",
        "--set",
        "collector.total_frames=1024",
        "--quiet",
    )
    assert_exit(result, 0)
    assert not ignored.exists()
    folder = only_run_folder(out, "ppo_cartpole")
    saved = tomllib.loads((folder / "config.toml").read_text(encoding="utf-8"))
    assert saved["run"]["seed"] == 7
    assert saved["run"]["device"] == "cpu"
    assert read_run_json(folder)["device"] == "cpu"

    assert "iteration 1/" not in result.stdout, result.stdout
    assert not TIMING_TITLE.search(result.stdout), result.stdout
    assert re.search(r"^run (completed|solved)", result.stdout, re.MULTILINE), result.stdout
    assert result.stdout.count(str(folder)) >= 2, result.stdout


def assert_plain_output_with_tables_every_2(result) -> None:
    """No cursor movement or carriage return (no live progress bar), and a timing table after
    iterations 2, 4, 6 and 8 of 8."""
    for stream in (result.stdout, result.stderr):
        assert not CURSOR_ESCAPE.search(stream), repr(stream[:2000])
        assert "\r" not in stream, repr(stream[:2000])
    titles = [(int(a), int(b)) for a, b in TIMING_TITLE.findall(result.stdout)]
    assert titles == [(2, 8), (4, 8), (6, 8), (8, 8)], result.stdout


def test_output_off_a_terminal_has_no_cursor_movement_and_tables_every_n(cli, tmp_path):
    # Output captured by the runner, as written to a file: the console must see it is no terminal.
    result = cli(
        "train",
        "ppo_cartpole",
        "--set",
        "collector.total_frames=4096",
        "--set",
        "timing.every=2",
        "--set",
        "eval.final_episodes=0",
        "--out",
        tmp_path / "runs",
    )
    assert_exit(result, 0)
    assert_plain_output_with_tables_every_2(result)


@pytest.mark.integration
def test_output_piped_from_a_terminal_users_shell_has_no_cursor_movement(tmp_path):
    """The console decides at start-up from its process's streams and environment, which an
    in-process run cannot set: a user's terminal settings, with output redirected to a pipe."""
    out = tmp_path / "runs"
    env = cli_env(TERM="xterm-256color")
    env.pop("NO_COLOR")
    result = rlcli_process(
        "train",
        "ppo_cartpole",
        "--set",
        "collector.total_frames=4096",
        "--set",
        "timing.every=2",
        "--out",
        out,
        env=env,
    )
    assert_exit(result, 0)
    assert_plain_output_with_tables_every_2(result)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_device_without_cuda_is_bad_input(cli, tmp_path):
    out = tmp_path / "runs"
    result = cli("train", "ppo_cartpole", "--device", "cuda", "--out", out)
    assert_exit(result, 2)
    assert "CUDA" in result.stderr, output_of(result)
    assert "run.device" in result.stderr, output_of(result)
    no_run_folder(out)


# In this process, and once as the real command (integration): the representative of the bad-input
# tests here whose exit 2 without a traceback is checked as the shell sees it, an env that cannot be
# made, found only once the run is being built.
@pytest.mark.parametrize(
    "run",
    [
        pytest.param(invoke, id="in-process"),
        pytest.param(rlcli_process, id="as-the-shell-sees-it", marks=pytest.mark.integration),
    ],
)
def test_env_kwargs_that_break_the_env_are_bad_input(run, tmp_path):
    out = tmp_path / "runs"
    result = run("train", "ppo_cartpole", "--set", "env.kwargs={nonexistent_kwarg=1}", "--out", out)
    assert_exit(result, 2)
    assert "CartPole-v1" in result.stderr, output_of(result)
    assert "nonexistent_kwarg" in result.stderr, output_of(result)
    no_run_folder(out)


def test_unsupported_observation_space_is_bad_input(cli, tmp_path):
    out = tmp_path / "runs"
    config = tmp_path / "blackjack.toml"
    config.write_text(
        '[env]\nid = "Blackjack-v1"\nnum_envs = 4\n\n'
        '[algo]\nname = "ppo"\nminibatch_size = 32\n\n'
        "[collector]\nframes_per_batch = 64\ntotal_frames = 640\n",
        encoding="utf-8",
    )
    result = cli("train", config, "--out", out)
    assert_exit(result, 2)
    assert "Blackjack-v1" in result.stderr, output_of(result)
    assert "observation space" in result.stderr, output_of(result)
    assert "Box" in result.stderr, output_of(result)
    no_run_folder(out)


def test_config_error_located_in_a_file_outside_the_working_folder_is_bad_input(cli, tmp_path):
    out = tmp_path / "runs"
    # Run from tmp_path, so the message locates the error as [/abs/path/ppo_cartpole.toml:LINE],
    # which rich would take for a closing markup tag if the message were not escaped.
    result = cli("train", "ppo_cartpole", "--set", "env.id=Blackjack-v1", "--out", out, cwd=tmp_path)
    assert_exit(result, 2)
    assert "env.vectorization" in result.stderr, output_of(result)
    assert "ppo_cartpole.toml:" in result.stderr, output_of(result)
    no_run_folder(out)


def test_non_finite_loss_stops_the_run_and_keeps_the_folder(cli, tmp_path):
    out = tmp_path / "runs"
    # Plain SGD at a high rate with no gradient clipping and a heavy value loss:
    # the weights blow up during the first update, so the second one is NaN.
    result = cli(
        "train",
        "ppo_cartpole",
        "--set",
        "optim.name=sgd",
        "--set",
        "optim.lr=0.1",
        "--set",
        "optim.max_grad_norm=0",
        "--set",
        "algo.value_coef=10",
        "--set",
        "collector.total_frames=8192",
        "--quiet",
        "--out",
        out,
    )
    assert_exit(result, 1)
    found = NAN_ERROR.search(result.stderr)
    assert found, output_of(result)
    failed_at = int(found.group(1))
    assert failed_at >= 2, f"want a failure after some metrics were written:\n{output_of(result)}"

    folder = only_run_folder(out, "ppo_cartpole")
    status = read_run_json(folder)
    assert status["status"] == "failed"
    assert NAN_ERROR.search(status["error"] or ""), status
    assert status["iterations"] == failed_at - 1
    _, rows = read_csv(folder / "metrics.csv")
    assert_iterations(rows, count=failed_at - 1, frames_per_batch=512)
    assert len(read_jsonl(folder / "metrics.jsonl")) == failed_at - 1
    assert (folder / "final.pt").is_file()
    final = torch.load(folder / "final.pt", map_location="cpu", weights_only=True)
    assert final["iteration"] == failed_at - 1
    # The weights saved are the last ones that gave finite losses, not the diverged ones.
    assert all(torch.isfinite(t).all() for t in final["agent"].values() if t.is_floating_point())


def test_nan_in_env_kwargs_stops_the_run_naming_iteration_and_loss(cli, tmp_path):
    out = tmp_path / "runs"
    # Pendulum with gravity NaN: observations, then every loss term, become NaN.
    result = cli(
        "train",
        "ppo_pendulum",
        "--set",
        "env.kwargs={g=nan}",
        "--set",
        "collector.total_frames=1024",
        "--set",
        "collector.frames_per_batch=512",
        "--quiet",
        "--out",
        out,
    )
    assert_exit(result, 1)
    found = NAN_ERROR.search(result.stderr)
    assert found, output_of(result)
    failed_at = int(found.group(1))

    folder = only_run_folder(out, "ppo_pendulum")
    status = read_run_json(folder)
    assert status["status"] == "failed"
    assert found.group(0) in (status["error"] or ""), status
    assert status["iterations"] == failed_at - 1
    _, rows = read_csv(folder / "metrics.csv")
    assert_iterations(rows, count=failed_at - 1, frames_per_batch=512)
    # The config that failed is kept, NaN included, so the failure can be rerun.
    saved = tomllib.loads((folder / "config.toml").read_text(encoding="utf-8"))
    assert math.isnan(saved["env"]["kwargs"]["g"])
    assert (folder / "final.pt").is_file()


@pytest.mark.integration
def test_ctrl_c_stops_cleanly_and_keeps_the_run_folder(tmp_path):
    out = tmp_path / "runs"
    proc = subprocess.Popen(
        command(
            "train",
            "ppo_cartpole",
            "--set",
            "collector.total_frames=10000000",
            "--set",
            "run.stop_at_return=100000",
            "--quiet",
            "--out",
            out,
        ),
        cwd=ROOT,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    try:
        deadline = time.monotonic() + 60
        written = 0
        while written < 3:
            assert proc.poll() is None, f"rlcli exited early with {proc.returncode}"
            assert time.monotonic() < deadline, "no 3 metrics rows within 60 s"
            time.sleep(0.05)
            found = list(out.glob("ppo_cartpole-*/metrics.csv")) if out.exists() else []
            if found:
                written = len(found[0].read_text(encoding="utf-8").splitlines()) - 1
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert_exit(result, 130)
    assert "interrupted" in stderr, output_of(result)

    folder = only_run_folder(out, "ppo_cartpole")
    status = read_run_json(folder)
    assert status["status"] == "interrupted"
    header, rows = read_csv(folder / "metrics.csv")
    assert set(REQUIRED_COLUMNS) <= set(header)
    assert len(rows) >= 3
    assert_iterations(rows, count=len(rows), frames_per_batch=512)
    assert status["iterations"] == len(rows)
    assert status["frames"] == 512 * len(rows)
    for line in (folder / "metrics.jsonl").read_text(encoding="utf-8").splitlines():
        json.loads(line)
    payload = load_final(folder)
    assert payload["iteration"] == status["iterations"]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
def test_cuda_run_writes_the_same_metrics_columns_as_cpu(cli, tmp_path, on_policy_run):
    out = tmp_path / "runs"
    result = cli(
        "train", "ppo_cartpole", "--device", "cuda", "--set", "collector.total_frames=2048", "--quiet", "--out", out
    )
    assert_exit(result, 0)
    folder = only_run_folder(out, "ppo_cartpole")
    header, rows = read_csv(folder / "metrics.csv")
    cpu_header, _ = read_csv(on_policy_run.folder / "metrics.csv")
    assert header == cpu_header
    assert_iterations(rows, count=4, frames_per_batch=512)
    status = read_run_json(folder)
    assert status["status"] in ("completed", "solved")
    assert status["device"].startswith("cuda")
    load_final(folder)


def test_a_preset_whose_extra_is_missing_names_the_extra(cli, tmp_path):
    """Without Box2D (hidden here: importing it fails, as where it is not installed), a LunarLander
    preset is bad input naming rlcli's box2d extra, in train and in validate --build alike."""
    from gymnasium.error import DependencyNotInstalled

    out = tmp_path / "runs"
    with package_hidden("Box2D", "gymnasium.envs.box2d"):
        # Else the train below would train LunarLander for its whole budget.
        with pytest.raises(DependencyNotInstalled):
            import gymnasium.envs.box2d  # noqa: F401
        for args in (
            ["train", "ppo_lunarlander", "--out", out],
            ["validate", "--build", "presets/dqn_lunarlander.toml"],
        ):
            done = cli(*args)
            output = done.stdout + done.stderr
            assert done.returncode == 2, output
            assert "pip install 'rlcli[box2d]'" in output and "Traceback" not in output, output
    no_run_folder(out)
