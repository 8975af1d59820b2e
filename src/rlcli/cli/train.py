"""``rlcli train``: train a preset and leave a run folder behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from rlcli.cli.render import SET_HELP, user_errors
from rlcli.config.load import Override, load_config
from rlcli.console import console, err_console

EXIT_TRAINING_FAILED = 1
EXIT_INTERRUPTED = 130


def _typed(item: str | Override) -> str:
    """An override as the user typed it."""
    return item.flag if isinstance(item, Override) else f"--set {item}"


def train(
    preset: Annotated[str, typer.Argument(metavar="PRESET", help="A preset file, or the name of a shipped preset.")],
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help=SET_HELP)] = None,
    device: Annotated[
        Optional[str], typer.Option(metavar="DEVICE", help="Shorthand for --set run.device=...: auto, cpu, cuda or cuda:N.")
    ] = None,
    seed: Annotated[Optional[int], typer.Option(metavar="N", help="Shorthand for --set run.seed=N.")] = None,
    out: Annotated[Optional[Path], typer.Option(metavar="DIR", help="Shorthand for --set run.output_dir=DIR.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", metavar="", help="Print only the final summary.")] = False,
) -> None:
    """Train an agent; Ctrl-C stops cleanly and keeps the run folder."""
    # Imported here so that other commands start without the training stack.
    from rlcli.report import ConsoleReport
    from rlcli.run import build_run
    from rlcli.trainer import TrainingError
    from rlcli.trainer import train as train_run

    overrides: list[str | Override] = list(set_ or [])
    # The flags are shorthands that win over the file and over --set; errors name the flag.
    if device is not None:
        overrides.append(Override(f"run.device={json.dumps(device)}", f"--device {device}"))
    if seed is not None:
        overrides.append(Override(f"run.seed={seed}", f"--seed {seed}"))
    if out is not None:
        overrides.append(Override(f"run.output_dir={json.dumps(str(out))}", f"--out {out}"))
    with user_errors(preset):
        cfg = load_config(preset, overrides)
        run = build_run(cfg, source=preset, overrides=[_typed(item) for item in overrides])
    report = ConsoleReport(console, quiet=quiet)
    try:
        with user_errors(preset):
            state = train_run(run, hooks=report.hooks())
    except TrainingError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(EXIT_TRAINING_FAILED) from None
    if state.status == "interrupted":
        err_console.print("interrupted: the run folder holds the metrics and weights so far")
        raise typer.Exit(EXIT_INTERRUPTED)
