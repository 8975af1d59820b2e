"""``rlcli train PRESET --seeds SPEC [--jobs J]`` and ``--env-package MODULE``.

In this process (Typer's runner): the bad arguments that exit before any seed starts, and every
``--env-package`` behaviour (``tests/envpkg`` put on sys.path). Integration: the pools of seed
processes (two at a time, a failed seed, Ctrl-C passed on to each), through the real command.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import gymnasium as gym
import pytest

from support.cli import assert_bad_input, invoke, rlcli_executable, sigint_default
from support.paths import ENV_PACKAGES, ROOT
from support.presets import MINIMAL_TOML, require_extra

CORRIDOR = MINIMAL_TOML.replace('id = "CartPole-v1"', 'id = "RlcliTest/Corridor-v0"')


def with_env_packages() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": f"{ENV_PACKAGES}{os.pathsep}{path}" if path else str(ENV_PACKAGES),
        "COLUMNS": "400",
        "NO_COLOR": "1",
    }


def run_cli(*args, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [rlcli_executable(), *map(str, args)],
        cwd=ROOT,
        env=with_env_packages(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--seeds", ""), "no seeds given"),
        (("--seeds", "4-1"), "the range 4-1 is reversed"),
        (("--seeds", "0,x"), "'x' is not a seed or a range"),
        (("--seeds", "0-2", "--seed", "3"), "cannot be combined with --seed"),
        (("--seeds", "0-2", "--jobs", "0"), "--jobs 0: must be at least 1"),
        (
            (
                "--jobs",
                "2",
            ),
            "needs --seeds",
        ),
        (("--seeds", "0-1", "--env-package", "no_such_env_package"), "No module named 'no_such_env_package'"),
    ],
    ids=["empty", "reversed", "malformed", "with-seed", "jobs-0", "jobs-alone", "missing-package"],
)
def test_bad_seed_arguments_exit_2_before_any_work(cli, tmp_path, args, fragment):
    # In this process, a seed's process would be stopped by the layer guard: none starts.
    out = tmp_path / "runs"
    output = assert_bad_input(cli("train", "ppo_cartpole", "--out", out, *args), fragment)
    assert "Traceback" not in output
    assert not out.exists()


@pytest.mark.integration
def test_a_bad_seed_argument_exits_2_without_a_traceback_as_the_shell_sees_it(tmp_path):
    out = tmp_path / "runs"
    assert_bad_input(run_cli("train", "ppo_cartpole", "--out", out, "--seeds", "4-1"), "the range 4-1 is reversed")
    assert not out.exists()


@pytest.mark.integration
def test_two_seeds_two_jobs(tmp_path):
    out = tmp_path / "runs"
    result = run_cli(
        "train", "ppo_cartpole", "--seeds", "0,1", "--jobs", "2", "--out", out, "--set", "collector.total_frames=2048"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (group,) = out.iterdir()
    assert group.name.startswith("ppo_cartpole-") and group.name.endswith("-seeds")
    report = json.loads((group / "seeds.json").read_text(encoding="utf-8"))
    assert [s["seed"] for s in report["seeds"]] == [0, 1] and report["jobs"] == 2
    for entry in report["seeds"]:
        assert entry["status"] == "completed" and entry["frames"] == 2048 and entry["exit_code"] == 0
        run = json.loads((Path(entry["run_dir"]) / "run.json").read_text(encoding="utf-8"))
        assert Path(entry["run_dir"]).parent == group and run["seed"] == entry["seed"]
        assert run["last_return"] == entry["last_return"]
    # Different seeds, different runs.
    assert report["seeds"][0]["last_return"] != report["seeds"][1]["last_return"]
    assert report["summary"]["frames"]["median"] == 2048
    for word in ("ppo_cartpole: 2 seeds, 2 at a time", "median", "q1", "q3", "completed", "seeds folder:"):
        assert word in result.stdout
    # The group the seed processes wrote is one experiment for `rlcli plot` (tests/cli/test_plot.py
    # plots groups whose seeds ran in its own process).
    require_extra("matplotlib")
    plotted = invoke("plot", out, "-o", tmp_path / "curve.png")
    assert plotted.returncode == 0, plotted.stdout + plotted.stderr
    assert "1 line(s) from 2 run(s)" in plotted.stdout
    assert "ppo_cartpole (ppo on CartPole-v1), median of 2 seeds" in plotted.stdout


@pytest.mark.integration
def test_a_failed_seed_does_not_stop_the_others(tmp_path, write_toml):
    # The corridor env refuses to reset with seed 1: seed 1's run fails, seed 0's completes.
    config = write_toml(
        "corridor.toml",
        CORRIDOR.replace("num_envs = 4", "num_envs = 1").replace("[algo]", "kwargs = { explode_seed = 1 }\n\n[algo]"),
    )
    out = tmp_path / "runs"
    result = run_cli("train", config, "--env-package", "rlcli_test_envs", "--seeds", "0-1", "--jobs", "1", "--out", out)
    assert result.returncode == 1, result.stdout + result.stderr
    (group,) = out.iterdir()
    seeds = {s["seed"]: s for s in json.loads((group / "seeds.json").read_text(encoding="utf-8"))["seeds"]}
    assert seeds[0]["status"] == "completed"
    assert seeds[1]["status"] == "failed" and "exploded on purpose" in seeds[1]["reason"]
    assert "failed: error:" in result.stdout and "exploded on purpose" in result.stdout


@pytest.mark.integration
def test_ctrl_c_stops_every_seed_cleanly(tmp_path):
    out = tmp_path / "runs"
    proc = subprocess.Popen(
        [
            rlcli_executable(),
            "train",
            "ppo_cartpole",
            "--seeds",
            "0,1",
            "--jobs",
            "2",
            "--out",
            str(out),
            "--set",
            "run.stop_at_return=100000",
        ],
        cwd=ROOT,
        env=with_env_packages(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        started = list(out.glob("*-seeds/*/metrics.csv"))
        if len(started) == 2 and all(len(p.read_text().splitlines()) > 2 for p in started):
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout + stderr
    assert "Traceback" not in stdout + stderr
    (group,) = out.iterdir()
    report = json.loads((group / "seeds.json").read_text(encoding="utf-8"))
    assert report["interrupted"] is True
    for entry in report["seeds"]:
        assert entry["status"] == "interrupted"
        run = json.loads((Path(entry["run_dir"]) / "run.json").read_text(encoding="utf-8"))
        assert run["status"] == "interrupted" and (Path(entry["run_dir"]) / "final.pt").is_file()


def test_env_package_makes_a_custom_env_trainable(cli, tmp_path, write_toml, env_packages):
    config = write_toml("corridor.toml", CORRIDOR)
    out = tmp_path / "runs"
    for command in (("validate", config), ("validate", "--build", config), ("show-config", config)):
        done = cli(*command, "--env-package", "rlcli_test_envs")
        assert done.returncode == 0, done.stdout + done.stderr
    result = cli("train", config, "--env-package", "rlcli_test_envs", "--out", out, "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = out.iterdir()
    info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    assert info["env"] == "RlcliTest/Corridor-v0" and info["env_packages"] == ["rlcli_test_envs"]
    assert info["frames"] == 640


def test_without_the_env_package_the_id_is_unknown(cli, write_toml, monkeypatch):
    # gymnasium's registry is global to the process: another test may have imported the package here.
    monkeypatch.delitem(gym.registry, "RlcliTest/Corridor-v0", raising=False)
    config = write_toml("corridor.toml", CORRIDOR)
    assert_bad_input(cli("validate", config), "unknown gymnasium env id 'RlcliTest/Corridor-v0'")


def test_an_id_still_unknown_after_the_import_lists_the_new_close_ids(cli, write_toml, env_packages):
    config = write_toml("corridor.toml", CORRIDOR.replace("Corridor-v0", "Corridor-v1"))
    assert_bad_input(
        cli("validate", config, "--env-package", "rlcli_test_envs"),
        "unknown gymnasium env id 'RlcliTest/Corridor-v1'",
        "'RlcliTest/Corridor-v0'",
    )


@pytest.mark.parametrize(
    ("package", "fragments"),
    [
        (
            "no_such_env_package",
            [
                "--env-package no_such_env_package: cannot import it: ModuleNotFoundError: "
                "No module named 'no_such_env_package'"
            ],
        ),
        ("broken_envs", ["--env-package broken_envs: cannot import it: RuntimeError: broken on purpose"]),
        ("os;rm", ["--env-package os;rm: not a module name"]),
    ],
    ids=["missing", "raises", "not-a-name"],
)
@pytest.mark.parametrize("command", ["train", "validate", "show-config"])
def test_env_package_errors(cli, tmp_path, env_packages, package, fragments, command):
    out = tmp_path / "runs"
    args = ("train", "ppo_cartpole", "--out", out) if command == "train" else (command, "presets/ppo_cartpole.toml")
    output = assert_bad_input(cli(*args, "--env-package", package), *fragments)
    assert "second line never shown" not in output and not out.exists()
