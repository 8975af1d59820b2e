"""``rlcli show-config``: the fully resolved config, defaults filled in."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated

import typer

from rlcli.cli.render import EnvPackages, Overrides, user_errors
from rlcli.config.dump import to_toml, written
from rlcli.config.load import load_config
from rlcli.console import console
from rlcli.envs import import_env_packages


class Format(str, Enum):
    toml = "toml"
    json = "json"


def show_config(
    preset: Annotated[str, typer.Argument(metavar="PRESET", help="A preset file, or the name of a shipped preset.")],
    set_: Overrides = None,
    fmt: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.toml,
    env_package: EnvPackages = None,
) -> None:
    """Print the resolved config: extends merged, overrides applied, every default shown."""
    with user_errors():
        import_env_packages(env_package or [])
        cfg = load_config(preset, set_ or [])
    text = to_toml(cfg) if fmt is Format.toml else json.dumps(written(cfg, mode="json"), indent=2)
    console.print(text, markup=False, highlight=False, soft_wrap=True, end="" if text.endswith("\n") else "\n")
