"""Waiting on what a process or a server does, never on a fixed sleep: a condition polled until it
holds, a free port for a server, and a signal handler run as Python runs it."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Callable

import pytest


def wait_for(
    condition: Callable[[], object],
    what: str = "the condition",
    *,
    proc: subprocess.Popen | None = None,
    timeout: float = 120.0,
    interval: float = 0.005,
) -> None:
    """Return once ``condition()`` is true; fail naming ``what`` after ``timeout`` seconds, or as soon as
    ``proc`` (the process expected to make it true) has ended, with its exit status and stderr."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the process ended before {what}: exit {proc.returncode}\n{proc.communicate()[1]}")
        if time.monotonic() > deadline:
            if proc is not None:
                proc.kill()
            pytest.fail(f"no {what} within {timeout} s")
        time.sleep(interval)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago, for a server a test starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def deliver(signum: int) -> None:
    """Run the handler installed for ``signum`` as Python runs it when the signal arrives (in the main
    thread, between two bytecodes), without sending a signal that could end the test process."""
    handler = signal.getsignal(signum)
    assert callable(handler) and handler is not signal.default_int_handler, (
        f"rlcli installed no handler for {signal.Signals(signum).name}: {handler!r}"
    )
    handler(signum, None)
