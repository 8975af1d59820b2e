"""``rlcli schema``: JSON Schema of config files, for editors and CI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from rlcli.cli.render import user_errors
from rlcli.config.errors import InputError
from rlcli.config.jsonschema import json_schema
from rlcli.console import console


def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write to this file instead of stdout.")
    ] = None,
    partial: Annotated[
        bool,
        typer.Option("--partial", metavar="", help="Require nothing: the schema for _*.toml bases meant for extends."),
    ] = False,
) -> None:
    """Print the JSON Schema of preset files (for Taplo / Even Better TOML)."""
    text = json.dumps(json_schema(partial=partial), indent=2) + "\n"
    if output is None:
        console.print(text, markup=False, highlight=False, soft_wrap=True, end="")
    else:
        with user_errors():
            try:
                output.write_text(text, encoding="utf-8")
            except OSError as exc:
                raise InputError(f"--output {output}", f"cannot write the schema: {exc.strerror or exc}") from None
        console.print(f"wrote {output}", markup=False)
