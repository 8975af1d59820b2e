"""Strict configs and honest messages, through the CLI in this process: wrong types rejected, every
error at once, messages in words that name the flag, total_frames rounding, timing output that does
not flood, standard --help, and provenance in run.json. Ctrl-C at any moment is sent to the real
command (integration layer)."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from support.cli import assert_bad_input, rlcli_executable, sigint_default
from support.paths import ROOT
from support.presets import MINIMAL_TOML

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# One wrong-typed value for every kind of field, with the words its error must carry.
WRONG_TYPES = {
    # field: (TOML value, fragment of the message)
    "env.num_envs": ('"16"', 'expected an integer such as 16 (no quotes, no decimal point), got the string "16"'),
    "env.max_episode_steps": ("200.0", "expected an integer"),
    "algo.epochs": ("true", "expected an integer"),
    "env.normalize_observation": ('"yes"', 'expected true or false (no quotes), got the string "yes"'),
    "env.normalize_reward": ("1", "expected true or false"),
    "algo.gamma": ('"0.9"', 'expected a number such as 0.5 (no quotes), got the string "0.9"'),
    "algo.clip_epsilon": ("false", "expected a number"),
    "run.stop_at_return": ('"475"', "expected a number"),
    "run.name": ("5", 'expected a string in quotes, such as "text", got 5'),
    "network.activation": ("1", '1 is not allowed; allowed: "tanh", "relu"'),
    "network.hidden_sizes": ("[64.0, 64]", "expected an integer"),
    "logger.backends": ('"csv"', "expected a list such as [64, 64]"),
    "env.kwargs": ('"g=9.8"', "expected a table"),
}


def _config_with(values: dict[str, str]) -> str:
    """MINIMAL_TOML with ``section.key = value`` set, each value written as given (raw TOML)."""
    sections = {
        name: {key: json.dumps(v) for key, v in table.items()} for name, table in tomllib.loads(MINIMAL_TOML).items()
    }
    for path, value in values.items():
        section, key = path.split(".", 1)
        sections.setdefault(section, {})[key] = value
    return "".join(
        f"[{name}]\n" + "".join(f"{k} = {v}\n" for k, v in table.items()) + "\n" for name, table in sections.items()
    )


def test_every_field_type_rejects_a_wrong_typed_value_in_one_validate(cli, write_toml):
    path = write_toml("typed.toml", _config_with({k: v for k, (v, _) in WRONG_TYPES.items()}))
    result = cli("validate", "--json", path)
    assert result.returncode == 2, result.stdout + result.stderr
    errors = {e["path"]: e["message"] for e in json.loads(result.stdout)["files"][0]["errors"]}
    for field, (_, fragment) in WRONG_TYPES.items():
        (message,) = [m for p, m in errors.items() if p == field or p.startswith(field + "[")]
        assert fragment in message, (field, message)


@pytest.mark.parametrize(("field", "value"), [(k, v) for k, (v, _) in WRONG_TYPES.items()])
def test_show_config_never_prints_a_coerced_value(cli, write_toml, field, value):
    path = write_toml("one.toml", _config_with({field: value}))
    result = cli("show-config", path)
    assert_bad_input(result, field)
    assert result.stdout == ""


def test_an_integer_is_a_number_where_a_float_is_expected(cli, write_toml):
    path = write_toml("ints.toml", _config_with({"algo.gamma": "1", "optim.lr": "1", "env.clip_observation": "5"}))
    result = cli("show-config", path, "--format", "json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["algo"]["gamma"] == 1.0 and shown["optim"]["lr"] == 1.0


def test_set_values_are_toml_literals(cli):
    ok = cli("validate", "presets/ppo_cartpole.toml", "--set", "env.num_envs=16")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = cli("validate", "presets/ppo_cartpole.toml", "--set", 'env.num_envs="16"')
    assert_bad_input(bad, "env.num_envs", 'got the string "16"', '--set env.num_envs="16"')


def test_cross_section_errors_come_all_at_once_beside_field_errors(cli, write_toml):
    text = _config_with({"optim.lr": "-1"}).replace("minibatch_size = 32", "minibatch_size = 4096")
    text = text.replace("frames_per_batch = 64", "frames_per_batch = 1001").replace(
        "total_frames = 640", "total_frames = 500"
    )
    result = cli("validate", "--json", write_toml("cross.toml", text))
    assert result.returncode == 2
    paths = {e["path"] for e in json.loads(result.stdout)["files"][0]["errors"]}
    assert paths == {"optim.lr", "collector.frames_per_batch", "collector.total_frames", "algo.minibatch_size"}


def test_a_cross_section_check_waits_for_the_fields_it_reads(cli, write_toml):
    # num_envs is wrong, so "frames_per_batch is a multiple of num_envs" cannot be judged.
    text = MINIMAL_TOML.replace("num_envs = 4", 'num_envs = "4"').replace(
        "frames_per_batch = 64", "frames_per_batch = 66"
    )
    result = cli("validate", "--json", write_toml("wait.toml", text))
    paths = [e["path"] for e in json.loads(result.stdout)["files"][0]["errors"]]
    assert paths == ["env.num_envs"]


def test_device_flag_error_names_the_flag_and_the_allowed_values(cli, tmp_path):
    result = cli("train", "ppo_cartpole", "--device", "gpu", "--out", tmp_path)
    output = assert_bad_input(
        result, "run.device: 'gpu' is not a device; allowed: auto, cpu, cuda, cuda:N", "[--device gpu]"
    )
    assert "pattern" not in output and "^(" not in output and "--set run.device" not in output


def test_run_name_error_is_in_words(cli, tmp_path):
    result = cli("train", "ppo_cartpole", "--set", 'run.name="my run"', "--out", tmp_path)
    output = assert_bad_input(result, "run.name: 'my run' has a space; allowed: letters, digits, _ . -")
    assert "pattern" not in output and "[A-Za-z" not in output


def test_unknown_key_in_the_wrong_section_is_hinted_there(cli):
    result = cli("validate", "presets/ppo_cartpole.toml", "--set", "algo.learning_rate=1e-3")
    assert_bad_input(result, "algo.learning_rate: unknown key; did you mean optim.lr?")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("bench", "--quick", "--suite", "envs"), ["error: --suite envs: unknown suite; known suites: env"]),
        (
            ("bench", "--quick", "--suite", "loss", "--compare", "{notjson}"),
            ["error: bench baseline", "not a JSON file"],
        ),
        (
            ("train", "ppo_cartpole", "--out", "{file}/runs"),
            ["error: run folder under", "choose another with --out DIR"],
        ),
        (("schema", "-o", "{file}/schema.json"), ["error: --output", "cannot write the schema"]),
    ],
    ids=["bench-suite", "bench-baseline", "train-out", "schema-output"],
)
def test_errors_about_other_files_say_what_they_are_about(cli, tmp_path, args, fragments):
    notjson = tmp_path / "baseline.json"
    notjson.write_text("not json", encoding="utf-8")
    a_file = tmp_path / "a_file"
    a_file.write_text("", encoding="utf-8")
    args = [a.format(notjson=notjson, file=a_file) for a in args]
    output = assert_bad_input(cli(*args), *fragments)
    assert "invalid config" not in output


def _rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _only_run(out: Path) -> Path:
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def test_total_frames_rounds_up_and_banner_schedule_and_run_json_agree(cli, tmp_path):
    out = tmp_path / "runs"
    result = cli("train", "ppo_cartpole", "--set", "collector.total_frames=1000", "--out", out)
    assert result.returncode == 0, result.stderr
    assert "1,024 frames (total_frames 1,000 rounded up to 2 whole batches of 512)" in result.stdout
    run_dir = _only_run(out)
    info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    assert (info["frames"], info["planned_frames"], info["iterations"], info["planned_iterations"]) == (
        1024,
        1024,
        2,
        2,
    )
    rows = _rows(run_dir)
    assert [int(r["frames"]) for r in rows] == [512, 1024]
    # ppo_cartpole's schedules are linear over the run: the last iteration uses the last step's
    # factor, 1/2 of the start, not the 1/1 of a run cut to one iteration.
    cfg = tomllib.loads((run_dir / "config.toml").read_text(encoding="utf-8"))
    assert float(rows[-1]["optim/lr"]) == pytest.approx(cfg["optim"]["lr"] / 2)
    assert float(rows[-1]["stats/clip_epsilon"]) == pytest.approx(cfg["algo"]["clip_epsilon"] / 2)


def test_a2c_cartpole_prints_a_handful_of_tables_not_thousands(cli, tmp_path):
    # 200 iterations of 320 frames (64 envs x 5 steps), each a small fraction of timing.seconds.
    result = cli("train", "a2c_cartpole", "--set", "collector.total_frames=64000", "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    run_dir = _only_run(tmp_path)
    wall_time = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["wall_time_s"]
    seconds = tomllib.loads((run_dir / "config.toml").read_text(encoding="utf-8"))["timing"]["seconds"]
    # A table at most once per timing.seconds of the run's own wall time (however slow the
    # machine), then the run's timing breakdown.
    tables = re.findall(r"^iteration \d+/200", result.stdout, flags=re.MULTILINE)
    assert len(tables) <= 1 + wall_time / seconds, (len(tables), wall_time)
    assert "time per phase over 200 iterations" in result.stdout
    # The banner and the summary, and each table's dozen lines: nothing for every iteration.
    assert len(result.stdout.splitlines()) <= 60 + 20 * len(tables)


def test_timing_every_set_explicitly_still_prints_by_iteration(cli, tmp_path):
    result = cli(
        "train", "ppo_cartpole", "--set", "collector.total_frames=2048", "--set", "timing.every=1", "--out", tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert all(f"iteration {i}/4" in result.stdout for i in range(1, 5))


def test_short_and_quiet_runs_still_show_and_record_the_timing_breakdown(cli, tmp_path):
    out = tmp_path / "runs"
    result = cli("train", "ppo_cartpole", "--set", "collector.total_frames=4096", "--quiet", "--out", out)
    assert result.returncode == 0, result.stderr
    assert "time per phase over 8 iterations" in result.stdout and "iteration 8/8" not in result.stdout
    timing = json.loads((_only_run(out) / "run.json").read_text(encoding="utf-8"))["timing"]
    assert {"collect", "update", "update.backward", "iteration"} <= set(timing)
    assert timing["iteration"]["share"] == 1.0
    assert 0 < timing["collect"]["share"] < 1 and timing["collect"]["mean_ms"] > 0


def test_run_json_records_provenance(cli, tmp_path):
    out = tmp_path / "runs"
    result = cli("train", "ppo_cartpole", "--seed", "7", "--set", "collector.total_frames=512", "--out", out, "-q")
    assert result.returncode == 0, result.stderr
    info = json.loads((_only_run(out) / "run.json").read_text(encoding="utf-8"))
    assert info["seed"] == 7
    assert info["started_at"].endswith("+00:00")
    assert set(info["versions"]) == {"rlcli", "torch", "gymnasium", "tensordict", "python"}
    assert info["versions"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert info["overrides"] == ["--set collector.total_frames=512", "--seed 7", f"--out {out}"]
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:
        assert info["git"]["commit"] == head.stdout.strip()
    else:
        assert info["git"] is None


@pytest.mark.parametrize(
    "command",
    [(), ("train",), ("validate",), ("show-config",), ("schema",), ("bench",)],
    ids=lambda c: " ".join(c) or "rlcli",
)
def test_help_renders_flags_the_standard_way(cli, command):
    result = cli(*command, "--help")
    assert result.returncode == 0, result.stderr
    assert "<bool>" not in result.stdout and "--help" in result.stdout
    if command == ("train",):
        assert "-q, --quiet " in result.stdout and "--seed N " in result.stdout
        assert "--set KEY=VALUE" in result.stdout


def _library(name: str) -> Callable[[subprocess.Popen, Path], bool]:
    """Whether the child has mapped a native library whose file name holds ``name`` (Linux /proc)."""

    def mapped(proc: subprocess.Popen, out: Path) -> bool:
        try:
            return name in Path(f"/proc/{proc.pid}/maps").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False

    return mapped


def _run_file(name: str, rows: int = 0) -> Callable[[subprocess.Popen, Path], bool]:
    """Whether the run folder holds ``name`` with more than ``rows`` lines (a csv header counts)."""

    def written(proc: subprocess.Popen, out: Path) -> bool:
        found = list(out.glob(f"*/{name}"))
        return bool(found) and len(found[0].read_text(encoding="utf-8").splitlines()) > rows

    return written


PROC_MAPS = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps (Linux)")

# Each Ctrl-C lands after something the child has visibly done, never after a guessed delay:
# its imports under way inside the CLI's handler (pydantic's native module mapped), the training
# stack loading (libtorch mapped), the run folder written (run.json) and training under way (a row
# in metrics.csv); from the first row on, the loop's own handler holds and stops at the end of an
# iteration. (Before the CLI's handler, in the interpreter's own start-up, Python prints the
# KeyboardInterrupt itself: no moment here is that early.)
MOMENTS = [
    pytest.param(_library("_pydantic_core"), False, id="importing", marks=PROC_MAPS),
    pytest.param(_library("libtorch_cpu"), False, id="loading-torch", marks=PROC_MAPS),
    pytest.param(_run_file("run.json"), False, id="run-folder"),
    pytest.param(_run_file("metrics.csv", rows=1), True, id="training"),
]


@pytest.mark.integration
@pytest.mark.parametrize(("reached", "in_loop"), MOMENTS)
def test_ctrl_c_at_any_moment_exits_130_without_a_traceback(tmp_path, reached, in_loop):
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    # A budget and a target no run reaches before the Ctrl-C, however slow the machine.
    proc = subprocess.Popen(
        [
            rlcli_executable(),
            "train",
            "ppo_cartpole",
            "--out",
            str(tmp_path),
            "-q",
            "--set",
            "collector.total_frames=100000000",
            "--set",
            "run.stop_at_return=100000",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    try:
        deadline = time.monotonic() + 120
        while not reached(proc, tmp_path):
            if proc.poll() is not None:
                pytest.fail(f"the run ended first: exit {proc.returncode}\n{''.join(proc.communicate())}")
            if time.monotonic() > deadline:
                pytest.fail("the moment to interrupt was not reached within 120 s")
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, out + err
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err
    if in_loop:
        run_dir = _only_run(tmp_path)
        info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        assert (info["status"], info["signal"]) == ("interrupted", "SIGINT")
        assert info["iterations"] >= 1
        assert [int(r["iteration"]) for r in _rows(run_dir)] == list(range(1, info["iterations"] + 1))
