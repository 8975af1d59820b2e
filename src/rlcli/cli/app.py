"""The ``rlcli`` Typer application; each command lives in its own module."""

from __future__ import annotations

from typing import Annotated

import typer

from rlcli import __version__
from rlcli.cli.bench import bench
from rlcli.cli.collect import collect
from rlcli.cli.datasets import datasets_app
from rlcli.cli.eval import eval_
from rlcli.cli.export import export
from rlcli.cli.plot import plot
from rlcli.cli.schema import schema
from rlcli.cli.show_config import show_config
from rlcli.cli.train import train
from rlcli.cli.tune import tune
from rlcli.cli.validate import validate
from rlcli.console import console

app = typer.Typer(
    name="rlcli",
    help="Train reinforcement-learning agents from a small TOML file.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Plain click-style help: flags print bare (--quiet), values by their metavar (--seed N).
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        console.print(f"rlcli {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", metavar="", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Train reinforcement-learning agents from a small TOML file."""


app.command("train")(train)
app.command("validate")(validate)
app.command("show-config")(show_config)
app.command("schema")(schema)
app.command("bench")(bench)
app.command("eval")(eval_)
app.command("export")(export)
app.command("collect")(collect)
app.add_typer(datasets_app, name="datasets")
app.command("plot")(plot)
app.command("tune")(tune)
