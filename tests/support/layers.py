"""The guard that keeps the default test layer in one process (tests/README.md).

A default-layer test runs in the pytest process: one that starts a child process or connects to a
server over the network belongs in the ``integration`` layer, and the autouse fixture here fails it
with a message saying so. The fixture and its hooks are one pytest plugin: ``tests/conftest.py`` imports
them, and ``tests/test_layers.py`` loads them into sessions of its own to test them.
"""

from __future__ import annotations

import importlib.util
import multiprocessing.process
import os
import socket
import subprocess
from pathlib import Path

import pytest

# Markers whose tests may start processes and reach servers.
PROCESS_LAYERS = ("integration", "slow")

# Programs a default-layer test may start, in milliseconds, with no rlcli behaviour under test in the child:
# provenance reads the git commit of a run's config folder; platform.processor() runs `uname -p` (h5py's
# import and the bench's machine line call it, and it keeps the answer only when the child ran).
ALLOWED_PROGRAMS = {"git", "uname"}

# Whether a test's call already failed, so that the teardown check does not report it twice.
CALL_FAILED = pytest.StashKey[bool]()


def pytest_sessionstart(session):
    """Build the caches that libraries fill by starting a process on first use, before any test is guarded.

    matplotlib lists the system fonts with ``fc-list`` the first time ``matplotlib.font_manager`` is
    imported on a machine (or under an empty ``MPLCONFIGDIR``), and keeps the list in its cache folder.
    Inside a guarded test that probe fails the test (issue 44: the plot tests failed on a fresh machine).
    Warming the cache here, rather than letting ``fc-list`` through the guard, keeps the guard's rule
    whole (a test may start no process but git and uname, whoever asks), keeps the seconds the cache
    takes to build out of whichever test draws first, and under xdist builds it once: the controller
    runs this hook before it starts its workers, which then read the cache it wrote.
    """
    if importlib.util.find_spec("matplotlib") is not None:
        import matplotlib.font_manager  # noqa: F401


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


def program(args) -> str:
    """The file name of the program a Popen ``args`` starts."""
    first = args if isinstance(args, (str, bytes, os.PathLike)) else next(iter(args), "")
    text = os.fsdecode(first).strip()
    return Path(text.split()[0]).name if text else ""


def guard_message(nodeid: str, what: str) -> str:
    return (
        f"{nodeid} {what} in the default test layer: mark it @pytest.mark.integration "
        "(tests/README.md says which layer a test belongs in), or test the library in-process"
    )


@pytest.fixture(autouse=True)
def layer_guard(request, monkeypatch):
    """Fail a default-layer test that starts a process or connects to a server over the network.

    The failure is raised where the process would start, through ``pytest.fail`` (a BaseException,
    which no ``except Exception`` in the code under test swallows), and again at teardown, whatever
    the code did with it. Unix sockets and servers a test binds itself are left alone.
    """
    if any(request.node.get_closest_marker(marker) for marker in PROCESS_LAYERS):
        yield
        return
    violations: list[str] = []

    def refuse(what: str):
        violations.append(guard_message(request.node.nodeid, what))
        pytest.fail(violations[-1], pytrace=False)

    popen_init = subprocess.Popen.__init__

    def popen(self, args, *rest, **kwargs):
        if program(args) not in ALLOWED_PROGRAMS:
            refuse(f"starts a process ({program(args)})")
        popen_init(self, args, *rest, **kwargs)

    def start(self):
        refuse(f"starts a multiprocessing child ({type(self).__name__})")

    def guarded(connect):
        def method(self, address):
            if self.family in (socket.AF_INET, socket.AF_INET6):
                refuse(f"connects to a server at {address!r}")
            return connect(self, address)

        return method

    monkeypatch.setattr(subprocess.Popen, "__init__", popen)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", start)
    monkeypatch.setattr(socket.socket, "connect", guarded(socket.socket.connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(socket.socket.connect_ex))
    yield
    if violations and not request.node.stash.get(CALL_FAILED, False):
        pytest.fail(violations[0], pytrace=False)
