"""The ``rlcli`` command line: one thin module per command over the Python API."""

import atexit
import os
import signal
import sys
import threading

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


def _leave(status: int) -> None:
    """Exit with ``status`` once every exit handler has run, without the interpreter's teardown.

    Python's own exit runs the exit handlers (multiprocessing's, weakref finalizers, the trackers',
    any a caller registered) and then frees every module and object one by one, which after torch and
    tensordict (with ``torch._dynamo``) are loaded took longer than a CartPole run's final evaluation
    (measured in issue 34). Here the handlers run as Python would run them, standard output and error
    are flushed, and the process ends. Every file rlcli writes is closed by then. While a thread that
    Python would wait for is still running, the exit is Python's own.
    """
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def main() -> None:
    """Run the ``rlcli`` command; Ctrl-C or SIGTERM at any moment exits 130 or 143 without a traceback."""
    try:
        _main()
        status = 0
    except SystemExit as exc:
        if isinstance(exc.code, str):
            # What Python does with a message: print it, exit 1.
            sys.stderr.write(exc.code + "\n")
        status = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    _leave(status)


def _main() -> None:
    """The command itself: the app, with Ctrl-C and SIGTERM turned into their exit statuses."""
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
