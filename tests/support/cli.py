"""``rlcli`` run two ways, as the tests need it: in this process through Typer's runner (:func:`invoke`,
the default layer) and as the installed console script (:func:`rlcli_process`, the integration layer);
and the checks every command's result meets."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.paths import ROOT


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


def rlcli_executable() -> str:
    """The ``rlcli`` console script of this interpreter's environment, else the one on PATH."""
    beside = Path(sys.executable).parent / "rlcli"
    if beside.is_file():
        return str(beside)
    found = shutil.which("rlcli")
    if found is None:
        pytest.fail("the rlcli console script is not installed (pip install -e .)")
    return found


def sigint_default() -> None:
    """``preexec_fn`` for a child that a test interrupts with SIGINT, as a terminal's Ctrl-C would.

    A child inherits an ignored SIGINT from a test run started as a background shell job
    (``.ci/run &``), and rlcli rightly leaves an ignored SIGINT ignored; a foreground
    process at a terminal has the default disposition, which this restores.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli_env(**overrides: str) -> dict[str, str]:
    """The environment of a non-interactive shell with a wide, colourless console.

    A wide console keeps rich from wrapping the long run-folder paths tests look for;
    the FORCE_COLOR family is dropped because it makes rich act as on a terminal.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "PYTHONBREAKPOINT")
    }
    env.update({"COLUMNS": "400", "NO_COLOR": "1", "TERM": "dumb"})
    env.update(overrides)
    return env


def command(*args: str | Path) -> list[str]:
    """The argv that starts the installed ``rlcli ARGS``."""
    return [rlcli_executable(), *(str(a) for a in args)]


def rlcli_process(
    *args: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess:
    """Run ``rlcli ARGS`` as the real command, to completion; text output captured (so stdout is
    not a terminal). For the integration layer: the default layer runs the command in-process."""
    return subprocess.run(
        command(*args), cwd=cwd, env=env or cli_env(), capture_output=True, text=True, timeout=timeout
    )


def output_of(result) -> str:
    """Exit status and output of a CompletedProcess, or of the ``cli`` fixture's CliResult."""
    return f"--- exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def assert_exit(result, code: int) -> None:
    """Check exit status ``code`` and no traceback in the output."""
    assert result.returncode == code, output_of(result)
    assert "Traceback" not in result.stdout + result.stderr, output_of(result)


def assert_bad_input(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """Check exit status 2, no traceback, and every fragment in the output; returns stdout + stderr."""
    output = result.stdout + result.stderr
    assert result.returncode == 2, f"exit {result.returncode}, expected 2:\n{output}"
    assert "Traceback" not in output, output
    for fragment in fragments:
        assert fragment in output, f"{fragment!r} not in:\n{output}"
    return output
