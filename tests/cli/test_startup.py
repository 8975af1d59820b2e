"""Start-up: config-only commands never load torch; ``python -m rlcli``; output off a terminal.

What a fresh interpreter imports, and how wide a real process's console is when its output goes
to a pipe: every test starts a process, so the file is in the ``integration`` layer.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.integration

# Runs the CLI in this interpreter and reports, at exit, whether the training stack was loaded.
PROBE = """
import atexit, sys
def report():
    heavy = sorted(m for m in ("torch", "tensordict", "rlcli.run", "rlcli.trainer.loop") if m in sys.modules)
    sys.stderr.write("LOADED:" + ",".join(heavy) + "\\n")
atexit.register(report)
sys.argv = ["rlcli", *sys.argv[1:]]
from rlcli.cli import main
main()
"""

CONFIG_ONLY = {
    "version": ["--version"],
    "help": ["--help"],
    "train-help": ["train", "--help"],
    "validate-help": ["validate", "--help"],
    "show-config-help": ["show-config", "--help"],
    "schema-help": ["schema", "--help"],
    "bench-help": ["bench", "--help"],
    "eval-help": ["eval", "--help"],
    "validate": ["validate", "presets/"],
    "validate-broken": ["validate", "tests/broken_configs"],
    "show-config": ["show-config", "ppo_cartpole", "--set", "algo.gamma=0.9"],
    "schema": ["schema"],
    "schema-partial": ["schema", "--partial"],
    "bench-unknown-suite": ["bench", "--suite", "envs"],
    "bench-bad-baseline": ["bench", "--compare", "tests/broken_configs/syntax_error.toml"],
    "train-bad-config": ["train", "tests/broken_configs/gamma_above_one.toml"],
    "train-bad-seeds": ["train", "ppo_cartpole", "--seeds", "3-1"],
    "datasets-list": ["datasets", "list"],
    "datasets-unknown-recipe": ["datasets", "make", "pendulum/meduim-v0"],
}


@pytest.mark.parametrize("args", list(CONFIG_ONLY.values()), ids=list(CONFIG_ONLY))
def test_config_only_commands_never_import_torch(args):
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=60,
    )
    assert done.returncode in (0, 2), done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    loaded = [line for line in done.stderr.splitlines() if line.startswith("LOADED:")]
    assert loaded == ["LOADED:"], f"{args}: {loaded}"


def test_the_probe_sees_torch_when_a_command_does_load_it():
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "validate", "--build", "presets/ppo_cartpole.toml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "LOADED:rlcli.run,tensordict,torch" in done.stderr


def test_python_dash_m_rlcli_is_the_cli():
    done = subprocess.run([sys.executable, "-m", "rlcli", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("rlcli ")
    bad = subprocess.run(
        [sys.executable, "-m", "rlcli", "validate", "tests/broken_configs/zero_envs.toml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "env.num_envs" in bad.stdout + bad.stderr


def _piped(*args: str) -> str:
    """Output of rlcli written to a pipe, with no COLUMNS to say how wide a terminal would be."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run(
        [sys.executable, "-m", "rlcli", *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300
    )
    return done.stdout + done.stderr


def test_piped_bench_table_keeps_whole_names_and_parameters():
    output = _piped("bench", "--quick", "--suite", "loss")
    assert "…" not in output
    for text in ("loss/a2c.forward_backward", "loss/ppo.forward_backward"):
        assert text in output
    # Each algorithm's first preset by name, its parameters whole on the row.
    assert re.search(r"preset=a2c_\w+, batch=256", output), output


def test_piped_validate_keeps_the_whole_message_on_its_line():
    output = _piped("validate", "tests/broken_configs/unknown_key.toml")
    message = (
        "algo.clip_epsilom: unknown key; did you mean clip_epsilon? (allowed in [algo]: clip_epsilon, "
        "clip_schedule, clip_value, entropy_coef, epochs, gamma, minibatch_size, name, normalize_advantage, "
        "return_lambda, sde_sample_freq, sequence_length, target_kl, use_sde, value_coef, value_target)  "
        "[tests/broken_configs/unknown_key.toml:7]"
    )
    assert any(message in line for line in output.splitlines()), output
