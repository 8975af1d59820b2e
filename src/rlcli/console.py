"""The shared rich consoles: results go to stdout, diagnostics to stderr."""

from rich.console import Console

# No emoji codes: ":smile:" in a config value must print as written.
console = Console(highlight=False, emoji=False)
err_console = Console(stderr=True, highlight=False, emoji=False)
