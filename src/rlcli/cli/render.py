"""What every command shares: turning library errors into one-screen messages and exit codes, and the
progress bar of a long step (making datasets, recording, evaluating)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from rlcli.config.errors import ConfigError
from rlcli.console import console, err_console

if TYPE_CHECKING:
    from rich.progress import TaskID

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
Overrides = Annotated[list[str] | None, typer.Option("--set", metavar="KEY=VALUE", help=SET_HELP)]
"""``--set`` of a command that reads a config (train, tune, validate, show-config)."""
EnvPackages = Annotated[list[str] | None, typer.Option("--env-package", metavar="MODULE", help=ENV_PACKAGE_HELP)]
"""``--env-package`` of a command that makes envs from a config."""


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
def progress_bar(*, quiet: bool = False) -> Iterator[Callable[[str, int, int], None] | None]:
    """A rich progress bar, one row a task: yields a callback taking (task, done, total), whose first call
    for a task adds its row; None on a pipe or with ``quiet`` (a bar there is noise in a log)."""
    if quiet or not console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, Progress, TimeRemainingColumn

    bar = Progress(
        "{task.description}",
        BarColumn(),
        "{task.completed:,}/{task.total:,}",
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    rows: dict[str, TaskID] = {}

    def update(task: str, done: int, total: int) -> None:
        if task not in rows:
            rows[task] = bar.add_task(task, total=total)
        bar.update(rows[task], completed=done, total=total)

    with bar:
        yield update
