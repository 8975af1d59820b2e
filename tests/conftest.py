"""Shared fixtures: the repository's folders, the layer guard, and two ways to run ``rlcli``: in this
process (``cli``, the default layer) and as the real command (``rlcli``, the integration layer)."""

from __future__ import annotations

import csv
import importlib
import os
import shutil
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

# The guard (autouse), the hook it reads, and the hook that builds the caches a library fills by starting a
# process on first use (matplotlib's font list), before any test is guarded: the default layer starts no process.
from layers import layer_guard, pytest_runtest_makereport, pytest_sessionstart  # noqa: F401
from rlcli.config.load import preset_extras

# Runs trained once per session, one per family (tests/runs.py), and copies of them for a test to change.
from runs import copy_run, env_packages, off_policy_run, offline_run, on_policy_run, pixel_run  # noqa: F401

# The tests read rlcli's output as a pipe or a file gives it: as wide as its content, no colour, no live
# display. Rich reads these once, when rlcli's consoles are made (on the first import, in this process for
# in-process tests): the FORCE_COLOR family would make it act as on a terminal, and the COLUMNS that
# pytest-xdist gives its workers (80) would wrap every message the tests look for.
for _variable in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS"):
    os.environ.pop(_variable, None)

# Each pytest-xdist worker computes on its share of the cores, as rlcli's own --jobs gives its processes
# (rlcli.runtime.cores.share_for_jobs): run.threads = "auto" reads it, in this process and in the rlcli processes
# the tests start. Two workers of two threads each on two cores would wait on each other at every matmul.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ and "OMP_NUM_THREADS" not in os.environ:
    from rlcli.runtime.cores import share_for_jobs

    os.environ.update(share_for_jobs(int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ROOT / "presets"
PRESET_FILES = sorted(PRESETS.glob("*.toml"))
BROKEN_CONFIGS = ROOT / "tests" / "broken_configs"


def missing_extras(preset: Path) -> list[str]:
    """The optional extras ``preset`` needs (``rlcli.config.load.preset_extras``) that are not installed
    here. `.ci/run` installs every extra; without one, the tests that build such a preset are skipped."""
    missing = []
    for extra in preset_extras(preset):
        try:
            importlib.import_module(extra.module)
        except ImportError:
            missing.append(extra.name)
    return missing


@pytest.fixture(scope="session", autouse=True)
def offline_root(tmp_path_factory):
    """The folder the tests' random Minari datasets are written to (tests/offline.py), once per session."""
    import offline

    offline.ROOT = tmp_path_factory.mktemp("datasets")
    return offline.ROOT


MISSING_EXTRAS = {p: missing_extras(p) for p in PRESET_FILES}
BUILDABLE_PRESETS = [p for p in PRESET_FILES if not MISSING_EXTRAS[p]]
PRESETS_TO_BUILD = [
    pytest.param(
        p,
        id=p.stem,
        marks=pytest.mark.skipif(bool(MISSING_EXTRAS[p]), reason=f"needs the {', '.join(MISSING_EXTRAS[p])} extra"),
    )
    for p in PRESET_FILES
]

# A small valid config for tests to start from: every size agrees with every other.
MINIMAL_TOML = """\
[env]
id = "CartPole-v1"
num_envs = 4

[algo]
name = "ppo"
minibatch_size = 32

[collector]
frames_per_batch = 64
total_frames = 640
"""


def rlcli_executable() -> str:
    """The ``rlcli`` console script of this interpreter's environment, else the one on PATH."""
    beside = Path(sys.executable).parent / "rlcli"
    if beside.is_file():
        return str(beside)
    found = shutil.which("rlcli")
    if found is None:
        pytest.fail("the rlcli console script is not installed (pip install -e .)")
    return found


RunCli = Callable[..., subprocess.CompletedProcess]


def sigint_default() -> None:
    """``preexec_fn`` for a child that a test interrupts with SIGINT, as a terminal's Ctrl-C would.

    A child inherits an ignored SIGINT from a test run started as a background shell job
    (``.ci/run &``), and rlcli rightly leaves an ignored SIGINT ignored; a foreground
    process at a terminal has the default disposition, which this restores.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="session")
def rlcli() -> RunCli:
    """Run ``rlcli ARGS`` in a subprocess; returns the CompletedProcess with text output.

    The terminal is made wide so that rich does not wrap the messages tests look for.
    """
    exe = rlcli_executable()

    def run(*args: str | Path, cwd: str | Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess:
        env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1", "TERM": "dumb"}
        return subprocess.run(
            [exe, *(str(a) for a in args)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


# Columns that measure time, and so differ between any two runs; every other column must match.
TIMING = ("wall_time_s", "fps")


def rows_of(run_dir: Path) -> list[dict[str, str]]:
    """The metrics rows of a run folder without the columns that measure time: what a resumed run must
    write as an unbroken one did."""
    with (run_dir / "metrics.csv").open(newline="", encoding="utf-8") as handle:
        return [
            {k: v for k, v in row.items() if k not in TIMING and not k.startswith("time/")}
            for row in csv.DictReader(handle)
        ]


def assert_bad_input(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """Check exit status 2, no traceback, and every fragment in the output; returns stdout + stderr."""
    output = result.stdout + result.stderr
    assert result.returncode == 2, f"exit {result.returncode}, expected 2:\n{output}"
    assert "Traceback" not in output, output
    for fragment in fragments:
        assert fragment in output, f"{fragment!r} not in:\n{output}"
    return output


@pytest.fixture
def write_toml(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write ``text`` to ``tmp_path / name`` and return the path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write


def require_extra(module: str) -> None:
    """Fail, not skip, when an extra that the README's test command installs is missing: the
    eval --video and plot tests must run wherever the tests are said to pass."""
    try:
        importlib.import_module(module)
    except ImportError:
        pytest.fail(
            f"{module} is missing: install the extras with the README's test command "
            "(pip install -e '.[test,plot,video,export]')"
        )


@pytest.fixture
def cartpole_dqn():
    """``cartpole_dqn(**algo)``: DQN on 4 CartPole envs whose episodes end by 7 steps, batches of 32
    frames, minibatches of 8 after 64 frames of warm-up (built, not started; the caller closes it)."""
    from rlcli.config.load import validate_data
    from rlcli.run import build_run

    def make(**algo):
        return build_run(
            validate_data(
                {
                    "run": {"seed": 4, "device": "cpu"},
                    "env": {
                        "id": "CartPole-v1",
                        "num_envs": 4,
                        "vectorization": "vector_entry_point",
                        "max_episode_steps": 7,
                    },
                    "algo": {
                        "name": "dqn",
                        "batch_size": 8,
                        "learning_starts": 64,
                        "replay": {"capacity": 10_000},
                        **algo,
                    },
                    "collector": {"frames_per_batch": 32, "total_frames": 3200},
                }
            )
        )

    return make


class FakeClock:
    """Seconds that move only by ``advance``; binary fractions keep every sum exact."""

    def __init__(self, start: float = 1000.0):
        self.now = start
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@dataclass
class CliResult:
    """What ``rlcli ARGS`` run in this process gave: the fields of a CompletedProcess that tests read."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


@contextmanager
def _working_folder(folder: Path):
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def invoke(*args: str | Path, cwd: str | Path = ROOT, env: dict[str, str] | None = None) -> CliResult:
    """Run ``rlcli ARGS`` through Typer's runner in this process.

    As ``rlcli.cli.main`` does: a Ctrl-C exits 130 with "interrupted"; an exception that escapes a
    command is written to stderr as the traceback a user would see (so "Traceback" checks hold).
    """
    from typer.testing import CliRunner

    from rlcli.cli.app import app
    from rlcli.cli.exits import EXIT_INTERRUPTED

    argv = [str(a) for a in args]
    runner = CliRunner()
    with _working_folder(Path(cwd)):
        try:
            result = runner.invoke(app, argv, env=env, catch_exceptions=True)
        except KeyboardInterrupt:
            return CliResult(argv, EXIT_INTERRUPTED, "", "interrupted\n")
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return CliResult(argv, result.exit_code, result.stdout, stderr)


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """``cli(*args, cwd=ROOT)``: ``rlcli ARGS`` in this process (see :func:`invoke`)."""
    return invoke


@contextmanager
def package_hidden(package: str, *importers: str) -> Iterator[None]:
    """Within the block, ``import package`` fails as it does where the package is not installed.

    The modules named ``importers`` (and their submodules), which import ``package`` when they are
    themselves imported, are dropped from ``sys.modules`` so that the next import runs again and
    meets the missing package; every module is as before once the block ends.
    """

    def ours(name: str) -> bool:
        return any(name == prefix or name.startswith(prefix + ".") for prefix in (package, *importers))

    saved = {name: module for name, module in sys.modules.items() if ours(name)}
    for name in saved:
        del sys.modules[name]
    # None in sys.modules makes ``import package`` raise ImportError (ModuleNotFoundError).
    sys.modules[package] = None
    try:
        yield
    finally:
        for name in [name for name in sys.modules if ours(name)]:
            del sys.modules[name]
        sys.modules.update(saved)
