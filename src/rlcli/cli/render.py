"""What every command shares: turning library errors into one-screen messages and exit codes, and the
episodes bar of a long evaluation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from rlcli.config.errors import ConfigError
from rlcli.console import err_console

EXIT_BAD_INPUT = 2

ENV_PACKAGE_HELP = (
    "Import this installed module first, so that its gymnasium envs are registered (repeatable): --env-package ale_py"
)
RunEnvPackages = Annotated[
    list[str] | None,
    typer.Option(
        "--env-package",
        metavar="MODULE",
        help=ENV_PACKAGE_HELP + "; give those the run was trained with (run.json names them)",
    ),
]
"""``--env-package`` of a command that reads a finished run (eval, export)."""

SET_HELP = "Override a config field, KEY=VALUE with a TOML value (repeatable): --set algo.gamma=0.98"


@contextmanager
def user_errors(file: str | None = None) -> Iterator[None]:
    """Print a :class:`ConfigError` without a traceback and exit with status 2.

    ``file`` names the config in errors that do not name one themselves.
    """
    try:
        yield
    except ConfigError as exc:
        exc.file = exc.file or file
        err_console.print(f"[bold red]error:[/] {escape(exc.render())}", soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None


@contextmanager
def episodes_bar(label: str, *, show: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A transient bar of an evaluation's episodes on stderr, when ``show`` and stderr is a terminal:
    yields the callable the evaluation tells ``(finished, in all)``, else None."""
    if not (show and err_console.is_terminal):
        yield None
        return
    columns = (TextColumn(f"[bold]{escape(label)}"), BarColumn(), MofNCompleteColumn(), TextColumn("episodes"))
    with Progress(*columns, TimeRemainingColumn(), console=err_console, transient=True) as bar:
        task = bar.add_task(label, total=None)

        def tell(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield tell
