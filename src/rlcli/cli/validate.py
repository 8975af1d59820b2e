"""``rlcli validate``: check config files, for people and for CI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from rlcli.cli.render import EXIT_BAD_INPUT, EnvPackages, Overrides, user_errors
from rlcli.config.check import check_files
from rlcli.console import console
from rlcli.envs import import_env_packages


def validate(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(metavar="PATH", help="Config files or folders of them (default: presets/).", show_default=False),
    ] = None,
    build: Annotated[
        bool, typer.Option("--build", metavar="", help="Also build the env, networks and algorithm, without training.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", metavar="", help="Print a machine-readable report.")] = False,
    set_: Overrides = None,
    env_package: EnvPackages = None,
) -> None:
    """Check config files; exit 0 only when every one is valid."""
    with user_errors():
        import_env_packages(env_package or [])
    results = check_files(paths or [], build=build, overrides=set_ or [])
    ok = bool(results) and all(r.ok for r in results)
    if as_json:
        report = {
            "ok": ok,
            "files": [
                {
                    "file": r.file,
                    "ok": r.ok,
                    "summary": r.summary,
                    "errors": [
                        {"path": i.path, "message": i.message, "source": i.source, "line": i.line, "column": i.column}
                        for i in r.issues
                    ],
                }
                for r in results
            ],
        }
        console.print_json(json.dumps(report))
    else:
        table = Table(title="rlcli validate" + (" --build" if build else ""))
        table.add_column("file", overflow="fold")
        table.add_column("status")
        table.add_column("details", overflow="fold")
        for r in results:
            if r.ok:
                table.add_row(escape(r.file), "[green]OK[/]", escape(r.summary))
            else:
                table.add_row(escape(r.file), "[bold red]INVALID[/]", escape("\n".join(i.render() for i in r.issues)))
        if not results:
            table.add_row("-", "[bold red]NO FILES[/]", "no .toml files found")
        console.print(table)
    if not ok:
        raise typer.Exit(EXIT_BAD_INPUT)
