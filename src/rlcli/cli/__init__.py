"""The ``rlcli`` command line: one thin module per command over the Python API."""

import atexit
import os
import signal
import sys

from rlcli.cli.exits import EXIT_INTERRUPTED, EXIT_TERMINATED


class Terminated(BaseException):
    """SIGTERM, raised where the command is until it installs handlers of its own, so that it unwinds
    through every ``finally`` (not a KeyboardInterrupt: typer turns those into a silent exit 130)."""


_MAIN_PID = os.getpid()


def _terminated(signum, frame):
    if os.getpid() != _MAIN_PID:
        # A forked child (an async env's worker) that inherited the handler: the default action.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise Terminated


_STATUS = [1]
"""The exit status :func:`_leave` exits with: the command's, once it is known (1 until then: a traceback)."""


def _leave() -> None:
    """The last exit handler: exit with the command's status without the interpreter's teardown.

    Registered before anything else is imported, so that it runs after every other exit handler (they
    run last-registered first: multiprocessing's, weakref finalizers, the trackers'). What it skips is
    the freeing of every module and object one by one, which after torch and tensordict (with
    ``torch._dynamo``) are loaded took longer than a CartPole run's final evaluation (measured in
    issue 34). Every file rlcli writes is closed by then; standard output and error are flushed here.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(_STATUS[0])


def main() -> None:
    """Run the ``rlcli`` command; Ctrl-C or SIGTERM at any moment exits 130 or 143 without a traceback."""
    atexit.register(_leave)
    try:
        _main()
        _STATUS[0] = 0
    except SystemExit as exc:
        _STATUS[0] = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        raise


def _main() -> None:
    # Not in a rank that torchrun started: its agent ends the other ranks with SIGTERM once one has failed,
    # and a rank must then die of it (the launcher reports the rank that failed first, not a stop).
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL and "TORCHELASTIC_RUN_ID" not in os.environ:
        signal.signal(signal.SIGTERM, _terminated)
    try:
        # Imported here so that a Ctrl-C during the imports is caught below.
        from rlcli.cli.app import app

        app()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except Terminated:
        sys.stderr.write("terminated\n")
        sys.exit(EXIT_TERMINATED)
