"""``rlcli tune``: real studies on CartPole-v1 (a few trials of a few thousand frames), each trial a real
``rlcli train`` process, the study read back from its SQLite storage with Optuna (integration layer:
tune's workers are processes); bad spaces, flags and studies refused in this process before anything
is written."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from support.cli import assert_bad_input, rlcli_executable
from support.paths import ROOT
from support.processes import free_port, wait_for

optuna = pytest.importorskip("optuna")

FRAMES = "collector.total_frames=2048"
SPACE = """
[tune]
report_every = 512
startup_trials = 1

[space]
"optim.lr" = { low = 1e-4, high = 1e-2, log = true }
"algo.clip_epsilon" = { choices = [0.1, 0.2, 0.3] }
"algo.epochs" = { low = 2, high = 6 }
"network.hidden_sizes" = { choices = [[32, 32], [64, 64]] }
"""


def space_file(tmp_path: Path, text: str = SPACE, name: str = "space.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load(folder: Path, study: str = "ppo_cartpole"):
    return optuna.load_study(study_name=study, storage=f"sqlite:///{folder / study / 'study.db'}")


def states(study) -> list[str]:
    return [t.state.name for t in study.get_trials(deepcopy=False)]


def start_tune(*args: str | Path) -> subprocess.Popen:
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.Popen(
        [rlcli_executable(), "tune", *map(str, args)],
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


@pytest.mark.integration
def test_a_study_runs_trials_as_train_runs_and_writes_a_best_config_that_trains(rlcli, tmp_path):
    space = space_file(tmp_path)
    result = rlcli(
        "tune",
        "ppo_cartpole",
        "--space",
        space,
        "--trials",
        "3",
        "--jobs",
        "2",
        # No pruner: with two trials running side by side, whether the median pruner stops the third
        # depends on which finishes first (pruning has its own test below).
        "--pruner",
        "none",
        "--set",
        FRAMES,
        "--out",
        tmp_path / "tune",
        timeout=240,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    study = load(tmp_path / "tune")
    assert states(study) == ["COMPLETE"] * 3
    for trial in study.trials:
        # Each sampled value is inside its range or among its choices.
        assert 1e-4 <= trial.params["optim.lr"] <= 1e-2 and 2 <= trial.params["algo.epochs"] <= 6
        assert trial.params["network.hidden_sizes"] in ("[32, 32]", "[64, 64]")
        (run_dir,) = (tmp_path / "tune" / "ppo_cartpole" / f"trial-{trial.number:04d}").glob("trial-*-seed0-*")
        info = json.loads((run_dir / "run.json").read_text())
        assert info["status"] == "completed" and info["frames"] == 2048
        # The trial's value is its run's rolling return (no [eval] in the preset), its config the sampled one.
        assert trial.value == pytest.approx(info["last_return"])
        config = (run_dir / "config.toml").read_text()
        assert f"epochs = {trial.params['algo.epochs']}" in config
        assert f"hidden_sizes = {trial.params['network.hidden_sizes']}" in config
        assert f"trial {trial.number}: complete" in output
    best = max(study.trials, key=lambda t: t.value)
    assert f"best trial: {best.number}" in output
    best_toml = tmp_path / "tune" / "ppo_cartpole" / "best.toml"
    text = best_toml.read_text()
    assert f"epochs = {best.params['algo.epochs']}" in text and f"lr = {best.params['optim.lr']!r}" in text
    assert rlcli("validate", best_toml).returncode == 0
    trained = rlcli("train", best_toml, "--set", "collector.total_frames=512", "--out", tmp_path / "runs", "-q")
    assert trained.returncode == 0, trained.stdout + trained.stderr
    shown = rlcli(
        "tune",
        "--show",
        "--study",
        "ppo_cartpole",
        "--storage",
        f"sqlite:///{tmp_path / 'tune' / 'ppo_cartpole' / 'study.db'}",
    )
    assert shown.returncode == 0 and shown.stdout.count("complete") == 3, shown.stdout + shown.stderr


@pytest.mark.integration
def test_a_trial_below_the_median_is_pruned_with_a_checkpoint_and_the_study_resumes(rlcli, tmp_path):
    # One trial that learns, then, in the same study, one whose learning rate learns nothing: the median
    # pruner stops it after the warm-up third of its budget.
    good = space_file(
        tmp_path,
        '[tune]\nreport_every = 512\nstartup_trials = 1\n[space]\n"optim.lr" = { low = 3e-3, high = 3e-3 }\n',
        "good.toml",
    )
    bad = space_file(tmp_path, good.read_text().replace("3e-3", "1e-7"), "bad.toml")
    common = ("--set", "collector.total_frames=8192", "--out", tmp_path / "tune")
    first = rlcli("tune", "ppo_cartpole", "--space", good, "--trials", "1", *common, timeout=240)
    assert first.returncode == 0, first.stdout + first.stderr
    second = rlcli("tune", "ppo_cartpole", "--space", bad, "--trials", "2", *common, timeout=240)
    assert second.returncode == 0, second.stdout + second.stderr
    study = load(tmp_path / "tune")
    assert states(study) == ["COMPLETE", "PRUNED"]
    pruned = study.trials[1]
    (run_dir,) = (tmp_path / "tune" / "ppo_cartpole" / "trial-0001").glob("trial-*")
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "pruned" and info["frames"] < 8192
    assert info["checkpoint"]["frames"] == info["frames"]
    assert pruned.user_attrs["frames"] == info["frames"]
    assert max(pruned.intermediate_values) <= info["frames"]


@pytest.mark.integration
def test_a_trial_that_crashes_is_failed_with_its_error_and_the_study_goes_on(rlcli, tmp_path):
    # A value loss weighted by 1e38 overflows: the run stops with exit 1 and its error in run.json.
    space = space_file(tmp_path, '[space]\n"algo.value_coef" = { low = 1e38, high = 1e38 }\n')
    result = rlcli(
        "tune",
        "ppo_cartpole",
        "--space",
        space,
        "--trials",
        "2",
        "--set",
        FRAMES,
        "--out",
        tmp_path / "tune",
        timeout=240,
    )
    output = result.stdout + result.stderr
    # Every trial failed: the tuner ran its --trials, then says so with exit 1.
    assert result.returncode == 1 and "every trial this search ran failed (2)" in output, output
    assert "Traceback" not in output
    study = load(tmp_path / "tune")
    assert states(study) == ["FAIL", "FAIL"]
    for trial in study.trials:
        assert (
            "seed 0: iteration 1: loss/" in trial.user_attrs["reason"]
            and "training stopped" in trial.user_attrs["reason"]
        )


@pytest.mark.integration
def test_sigterm_stops_the_running_trials_with_a_checkpoint_and_marks_them_failed(tmp_path):
    space = space_file(tmp_path)
    proc = start_tune(
        "ppo_cartpole",
        "--space",
        space,
        "--trials",
        "4",
        "--jobs",
        "2",
        "--set",
        "collector.total_frames=200000",
        "--out",
        tmp_path / "tune",
    )
    folder = tmp_path / "tune" / "ppo_cartpole"
    # Both trials have reported once: their runs are training.
    wait_for(
        lambda: (
            len(list(folder.glob("trial-*/seed-0.reports.jsonl"))) == 2
            and all(p.stat().st_size for p in folder.glob("trial-*/seed-0.reports.jsonl"))
        )
    )
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 143, output
    assert "Traceback" not in output
    study = load(tmp_path / "tune")
    assert states(study) == ["FAIL", "FAIL"]
    for trial in study.trials:
        assert "SIGTERM" in trial.user_attrs["reason"]
        (run_dir,) = (folder / f"trial-{trial.number:04d}").glob("trial-*")
        info = json.loads((run_dir / "run.json").read_text())
        assert info["status"] == "interrupted" and info["checkpoint"]["frames"] == info["frames"] > 0


@pytest.mark.integration
def test_a_killed_tuner_leaves_trials_that_the_next_one_fails_and_requeues(rlcli, tmp_path):
    space = space_file(tmp_path)
    args = (
        "ppo_cartpole",
        "--space",
        space,
        "--trials",
        "2",
        "--set",
        "collector.total_frames=200000",
        "--out",
        tmp_path / "tune",
    )
    proc = start_tune(*args)
    folder = tmp_path / "tune" / "ppo_cartpole"
    wait_for(lambda: any(p.stat().st_size for p in folder.glob("trial-*/seed-0.reports.jsonl")))
    proc.kill()
    proc.communicate(timeout=30)
    assert states(load(tmp_path / "tune")) == ["RUNNING"]
    # The orphaned trial notices its tuner is gone and stops, its folder complete.
    (run_dir,) = (folder / "trial-0000").glob("trial-*")
    wait_for(lambda: json.loads((run_dir / "run.json").read_text())["status"] != "running", timeout=30)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
    again = rlcli(
        "tune",
        *args[:-4],
        "--set",
        "collector.total_frames=1024",
        "--out",
        tmp_path / "tune",
        "--requeue-failed",
        timeout=240,
    )
    output = again.stdout + again.stderr
    assert again.returncode == 0, output
    study = load(tmp_path / "tune")
    # Trial 0 failed once its heartbeat went stale, and its parameters ran again: 2 finished, none twice.
    assert states(study)[0] == "FAIL" and sorted(states(study)[1:]) == ["COMPLETE", "COMPLETE"], output
    (again_0,) = [t for t in study.trials if t.user_attrs.get("requeued_from") == 0]
    assert again_0.params == study.trials[0].params and again_0.state.name == "COMPLETE"


@pytest.mark.integration
def test_two_tuners_share_one_study_without_running_a_trial_twice(tmp_path):
    space = space_file(tmp_path)
    # No pruner: which trials the median pruner stops depends on the order in which the two tuners'
    # trials report, and every trial here must run its whole budget.
    args = (
        "ppo_cartpole",
        "--space",
        space,
        "--trials",
        "4",
        "--pruner",
        "none",
        "--set",
        FRAMES,
        "--out",
        tmp_path / "tune",
    )
    procs = [start_tune(*args), start_tune(*args)]
    outputs = [p.communicate(timeout=240)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    study = load(tmp_path / "tune")
    assert states(study) == ["COMPLETE"] * 4
    started = [
        line.split(":")[0]
        for out in outputs
        for line in out.splitlines()
        if line.endswith(")") and ": started (" in line
    ]
    assert sorted(started) == [f"trial {n}" for n in range(4)], outputs
    assert all(":" in out and "trial" in out for out in outputs)


@pytest.mark.parametrize(
    ("space", "fragments"),
    [
        ('[space]\n"optim.lrr" = { low = 1e-4, high = 1e-2 }\n', ["space.optim.lrr", "did you mean lr?"]),
        ('[space]\n"algo.gamma" = { low = 0.9, high = 1.5 }\n', ["space.algo.gamma", "high = 1.5", "allowed: 0 to 1"]),
        ('[space]\n"algo.epochs" = { low = 8, high = 2 }\n', ["space.algo.epochs", "low (8) is above high (2)"]),
        (
            '[space]\n"optim.lr" = { low = 0.0, high = 1e-2, log = true }\n',
            ["space.optim.lr", "log = true needs low > 0"],
        ),
        ('[space]\n"algo.clip_epsilon" = { choices = [] }\n', ["space.algo.clip_epsilon", "choices is empty"]),
        ('[space]\n"network.activation" = { choices = ["tanh", 3] }\n', ["space.network.activation", "choice 3"]),
        ('[space]\n"algo.epochs" = { low = 2.5, high = 6 }\n', ["space.algo.epochs", "must be whole numbers"]),
    ],
)
def test_a_bad_space_is_refused_before_anything_is_written(cli, tmp_path, space, fragments):
    path = space_file(tmp_path, space)
    result = cli("tune", "ppo_cartpole", "--space", path, "--out", tmp_path / "tune")
    assert_bad_input(result, str(path), *fragments)
    assert not (tmp_path / "tune").exists()


@pytest.mark.parametrize(
    ("flags", "fragments"),
    [
        (("--sampler", "grid"), ["--sampler grid", "allowed: tpe, random, cmaes"]),
        (("--pruner", "asha"), ["--pruner asha", "allowed: median, hyperband, none"]),
        (("--jobs", "0"), ["--jobs 0", "at least 1"]),
        (("--objective", "speed"), ["--objective speed", "allowed: return, frames"]),
        # No server there (or no PostgreSQL driver installed: then the message names it). Trying the port
        # is a network connection: integration layer.
        pytest.param(
            ("--storage", "postgresql://user:pw@127.0.0.1:1/db"),
            ["--storage postgresql://"],
            marks=pytest.mark.integration,
        ),
        (("--storage", "mysql://user:pw@127.0.0.1:1/db"), ["--storage mysql://", "driver", "pip install"]),
        (("--storage", "study.db"), ["--storage study.db", "not a storage URL"]),
    ],
)
def test_bad_flags_are_refused_before_anything_is_written(request, tmp_path, flags, fragments):
    # The PostgreSQL case runs as the real command, as the rest of its (integration) layer does.
    run = request.getfixturevalue("rlcli" if request.node.get_closest_marker("integration") else "cli")
    result = run("tune", "ppo_cartpole", "--space", space_file(tmp_path), "--out", tmp_path / "tune", *flags)
    output = assert_bad_input(result, *fragments)
    if flags[0] == "--storage" and flags[1].startswith("postgresql"):
        assert "cannot open" in output or ("driver" in output and "pip install" in output), output
    assert not (tmp_path / "tune").exists()


def test_a_study_of_another_preset_is_refused(cli, tmp_path):
    storage = f"sqlite:///{tmp_path / 'shared.db'}"
    optuna.create_study(study_name="mine", storage=storage, direction="maximize").set_user_attr(
        "preset", "/elsewhere/sac_pendulum.toml"
    )
    result = cli(
        "tune",
        "ppo_cartpole",
        "--space",
        space_file(tmp_path),
        "--study",
        "mine",
        "--storage",
        storage,
        "--out",
        tmp_path / "tune",
    )
    assert_bad_input(result, "--study mine", "sac_pendulum.toml", "choose another --study")
    assert not (tmp_path / "tune").exists()


def test_without_optuna_the_command_names_the_extra(cli, tmp_path, monkeypatch):
    # rlcli imports optuna only when tune runs (rlcli.tune.study.import_optuna): a None in sys.modules
    # makes that import fail as a missing package does.
    monkeypatch.setitem(sys.modules, "optuna", None)
    result = cli("tune", "ppo_cartpole", "--space", space_file(tmp_path), "--out", tmp_path / "tune")
    assert_bad_input(result, "optuna", "pip install 'rlcli[tune]'")
    assert not (tmp_path / "tune").exists()


@pytest.fixture
def postgres_url():
    """A PostgreSQL server of the OS packages, started in a temporary folder (as the postgres user when
    this runs as root, which PostgreSQL refuses to be); skipped where there is none or no driver."""
    pytest.importorskip("psycopg")
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("no PostgreSQL server here (initdb, pg_ctl)")
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    folder = Path(tempfile.mkdtemp(prefix="rlcli-pg-", dir="/tmp"))
    folder.chmod(0o755)
    if as_user:
        shutil.chown(folder, "postgres")
    data, port = folder / "data", free_port()
    subprocess.run(
        [*as_user, initdb, "-D", str(data), "-U", "postgres", "--auth=trust"], check=True, capture_output=True
    )
    subprocess.run(
        [
            *as_user,
            pg_ctl,
            "-D",
            str(data),
            "-w",
            "-l",
            str(folder / "log"),
            "-o",
            f"-p {port} -k {folder} -c listen_addresses=127.0.0.1",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.integration
def test_two_tuners_share_one_study_on_postgresql(tmp_path, postgres_url):
    # The README's line for several machines: each worker names the same study and storage URL.
    space = space_file(tmp_path)
    args = (
        "ppo_cartpole",
        "--space",
        space,
        "--trials",
        "3",
        "--study",
        "cartpole",
        "--storage",
        postgres_url,
        "--set",
        "collector.total_frames=1024",
    )
    procs = [start_tune(*args, "--out", tmp_path / "a"), start_tune(*args, "--out", tmp_path / "b")]
    outputs = [p.communicate(timeout=240)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    study = optuna.load_study(study_name="cartpole", storage=postgres_url)
    finished = [t for t in study.trials if t.state.name in ("COMPLETE", "PRUNED")]
    numbers = [t.number for t in study.trials]
    # Workers on two machines may overshoot by a trial; none runs a trial twice.
    assert 3 <= len(finished) <= 4 and len(set(numbers)) == len(numbers), outputs


TEAM_SPACE = """
[tune]
report_every = 512
startup_trials = 1

[space]
"optim.lr" = { low = 1e-4, high = 1e-2, log = true }
"""


@pytest.mark.integration
def test_a_team_study_judges_its_trials_by_the_named_groups_return(rlcli, tmp_path):
    pytest.importorskip("mpe2")
    result = rlcli(
        "tune",
        "ippo_mpe_simple_tag",
        "--space",
        space_file(tmp_path, TEAM_SPACE),
        "--trials",
        "2",
        "--pruner",
        "none",
        "--objective",
        "return/agent",
        "--set",
        "collector.total_frames=2048",
        "--set",
        "eval.final_episodes=0",
        "--out",
        tmp_path / "tune",
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    study = load(tmp_path / "tune", "ippo_mpe_simple_tag")
    assert states(study) == ["COMPLETE"] * 2
    for trial in study.trials:
        (run_dir,) = (tmp_path / "tune" / "ippo_mpe_simple_tag" / f"trial-{trial.number:04d}").glob("trial-*")
        info = json.loads((run_dir / "run.json").read_text())
        groups = info["last_group_returns"]
        assert set(groups) == {"adversary", "agent"}
        # The trial's value is the runner's (agent group's) return, not the team's sum.
        assert trial.value == pytest.approx(groups["agent"])
        assert info["last_return"] == pytest.approx(groups["agent"] + groups["adversary"])


@pytest.mark.parametrize(
    ("preset", "objective", "fragments"),
    [
        ("ippo_mpe_simple_tag", "return/runner", ["--objective return/runner", "its groups: adversary, agent"]),
        ("ppo_cartpole", "return/agent", ["--objective return/agent", "single-agent env"]),
    ],
)
def test_a_group_objective_names_a_group_of_a_team_run(cli, tmp_path, preset, objective, fragments):
    pytest.importorskip("mpe2")
    result = cli("tune", preset, "--space", space_file(tmp_path, TEAM_SPACE), "--objective", objective)
    assert_bad_input(result, *fragments)
