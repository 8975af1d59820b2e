"""The ``rlcli`` command line: one thin module per command over the Python API."""

import sys

from rlcli.cli.exits import EXIT_INTERRUPTED


def main() -> None:
    """Run the ``rlcli`` command; Ctrl-C at any moment exits 130 without a traceback."""
    try:
        # Imported here so that a Ctrl-C during the imports is caught below.
        from rlcli.cli.app import app

        app()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
