"""The shared rich consoles: results go to stdout, diagnostics to stderr."""

import os
import sys

from rich.console import Console

# Off a terminal (a pipe, a file, a CI log) rich would cut every table at 80 columns,
# leaving names as "loss/a2c.forwa…": there, tables are as wide as their content.
# An explicit COLUMNS still wins.
WIDE = 100_000


def _width(stream) -> int | None:
    if "COLUMNS" in os.environ or (hasattr(stream, "isatty") and stream.isatty()):
        return None
    return WIDE


# No emoji codes: ":smile:" in a config value must print as written.
console = Console(highlight=False, emoji=False, width=_width(sys.stdout))
err_console = Console(stderr=True, highlight=False, emoji=False, width=_width(sys.stderr))
