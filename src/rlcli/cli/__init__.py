"""The ``rlcli`` command line: one thin module per command over the Python API."""

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


def main() -> None:
    """Run the ``rlcli`` command; Ctrl-C or SIGTERM at any moment exits 130 or 143 without a traceback."""
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
