"""The layer guard (tests/support/layers.py): a default-layer test that starts ``rlcli`` or reaches a server
fails with a message naming the marker to use; git, unix sockets and marked tests are let through; a
session on a machine that never ran matplotlib builds its font cache before the guard, not in a test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.cli import rlcli_executable

INNER_TESTS = """
import socket
import subprocess

import pytest

RLCLI = {rlcli!r}


def test_starts_rlcli():
    subprocess.run([RLCLI, "--version"], capture_output=True)


def test_swallows_the_error_and_still_fails():
    try:
        subprocess.run([RLCLI, "--version"], capture_output=True)
    except BaseException:
        pass


def test_connects_to_a_server():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        socket.create_connection(server.getsockname(), timeout=5).close()


def test_reads_git():
    subprocess.run(["git", "--version"], capture_output=True, check=True)


@pytest.mark.{marker}
def test_marked():
    subprocess.run([RLCLI, "--version"], capture_output=True, check=True)
"""


TESTS = Path(__file__).resolve().parent

# pytest-benchmark asks hg and git for a commit when it loads: not the inner tests' doing.
INNER_OPTIONS = ("-p", "no:cacheprovider", "-p", "no:benchmark")


def run_inner(pytester, marker: str):
    pytester.makeconftest("from support.layers import layer_guard, pytest_runtest_makereport  # noqa: F401\n")
    pytester.makeini(f"[pytest]\nmarkers =\n    {marker}: a layer\n")
    pytester.makepyfile(test_inner=INNER_TESTS.format(rlcli=rlcli_executable(), marker=marker))
    return pytester.runpytest_inprocess(*INNER_OPTIONS, "-k", "not test_marked")


def test_a_default_layer_test_that_starts_rlcli_fails_naming_the_marker(pytester):
    result = run_inner(pytester, "integration")
    # The test that swallowed the failure passes its call and errors at teardown.
    result.assert_outcomes(failed=2, passed=2, errors=1)
    output = result.stdout.str()
    for test in ("test_starts_rlcli", "test_swallows_the_error_and_still_fails"):
        assert (
            f"test_inner.py::{test} starts a process (rlcli) in the default test layer: "
            "mark it @pytest.mark.integration"
        ) in output, output
    assert "test_inner.py::test_connects_to_a_server connects to a server at ('127.0.0.1'," in output, output
    git = pytester.runpytest_inprocess(*INNER_OPTIONS, "-v", "-k", "test_reads_git").stdout.str()
    assert "test_inner.py::test_reads_git PASSED" in git, git


@pytest.mark.integration
@pytest.mark.parametrize("marker", ["integration", "slow"])
def test_a_marked_test_may_start_rlcli(pytester, marker):
    run_inner(pytester, marker)
    pytester.runpytest_inprocess(*INNER_OPTIONS, "-k", "test_marked").assert_outcomes(passed=1)


DRAWS_TEXT = """
def test_draws_text(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots()
    axes.set_title("return")
    figure.savefig(tmp_path / "curve.png")
    plt.close(figure)
"""


def run_on_a_fresh_machine(pytester, cache: Path, hooks: str):
    """Run the inner test file in a fresh interpreter whose matplotlib has an empty cache folder, with
    the conftest importing ``hooks`` from tests/support/layers.py."""
    cache.mkdir()
    pytester.makeconftest(f"from support.layers import {hooks}  # noqa: F401\n")
    env = {"MPLCONFIGDIR": str(cache), "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        return pytester.runpytest_subprocess(*INNER_OPTIONS, timeout=120)


@pytest.mark.integration
def test_a_fresh_matplotlib_cache_is_built_before_the_guard_and_only_then(pytester, tmp_path):
    """On a machine that never ran matplotlib, the session-start hook lets a guarded test draw; without
    the hook, the guard stops matplotlib's ``fc-list`` as any other process."""
    pytest.importorskip("matplotlib")
    pytester.makepyfile(test_inner=DRAWS_TEXT)
    guard_only = run_on_a_fresh_machine(pytester, tmp_path / "bare", "layer_guard, pytest_runtest_makereport")
    guard_only.assert_outcomes(failed=1)
    stopped = "test_inner.py::test_draws_text starts a process (fc-list) in the default test layer"
    assert stopped in guard_only.stdout.str(), guard_only.stdout.str()
    warmed = run_on_a_fresh_machine(
        pytester, tmp_path / "warmed", "layer_guard, pytest_runtest_makereport, pytest_sessionstart"
    )
    warmed.assert_outcomes(passed=1)
