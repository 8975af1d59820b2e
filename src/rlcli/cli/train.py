"""``rlcli train``: train a preset and leave a run folder behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from rlcli.cli.render import SET_HELP, user_errors
from rlcli.config.load import load_config
from rlcli.console import console, err_console

EXIT_TRAINING_FAILED = 1
EXIT_INTERRUPTED = 130


def train(
    preset: Annotated[str, typer.Argument(help="A preset file, or the name of a shipped preset.")],
    set_: Annotated[Optional[list[str]], typer.Option("--set", help=SET_HELP)] = None,
    device: Annotated[
        Optional[str], typer.Option(help="Shorthand for --set run.device=...: auto, cpu, cuda or cuda:N.")
    ] = None,
    seed: Annotated[Optional[int], typer.Option(help="Shorthand for --set run.seed=N.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Shorthand for --set run.output_dir=DIR.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the final summary.")] = False,
) -> None:
    """Train an agent; Ctrl-C stops cleanly and keeps the run folder."""
    # Imported here so that other commands start without the training stack.
    from rlcli.report import ConsoleReport
    from rlcli.run import build_run
    from rlcli.trainer import TrainingError
    from rlcli.trainer import train as train_run

    overrides = list(set_ or [])
    # The flags are shorthands that win over the file and over --set.
    if device is not None:
        overrides.append(f"run.device={json.dumps(device)}")
    if seed is not None:
        overrides.append(f"run.seed={seed}")
    if out is not None:
        overrides.append(f"run.output_dir={json.dumps(str(out))}")
    with user_errors(preset):
        cfg = load_config(preset, overrides)
        run = build_run(cfg, source=preset)
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
