"""``rlcli plot``: learning curves of run folders as a PNG (the ``plot`` extra)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from rlcli.cli.render import user_errors
from rlcli.console import console, err_console


class XAxis(str, Enum):
    frames = "frames"
    time = "time"


class Band(str, Enum):
    minmax = "minmax"
    iqr = "iqr"


def plot(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN_DIR",
            help="Run folders, or folders of them (an output folder, a --seeds group folder).",
            show_default=False,
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", help="The PNG to write.")] = Path(
        "curve.png"
    ),
    x: Annotated[XAxis, typer.Option("--x", help="x axis: frames, or wall-clock seconds of training.")] = XAxis.frames,
    y: Annotated[
        str, typer.Option("--y", metavar="COLUMN", help="A metrics.csv column.")
    ] = "rollout/episode_return_mean",
    band: Annotated[
        Band, typer.Option("--band", help="Shaded band of a group of seeds: min to max, or 25th to 75th percentile.")
    ] = Band.minmax,
) -> None:
    """Draw learning curves, one line per run or median and band per group of seeds, and time per iteration."""
    with user_errors():
        # Imported only now: the other commands start without numpy or the run readers.
        from rlcli.plot import plot_runs

        result = plot_runs(run_dirs, output=output, x=x.value, y=y, band=band.value)
    for path, why in result.skipped:
        err_console.print(f"[yellow]skipped[/] {escape(str(path))}: {escape(why)}")
    runs = sum(len(g.runs) for g in result.groups)
    console.print(f"wrote {escape(str(result.output))}: {len(result.groups)} line(s) from {runs} run(s)")
    for group in result.groups:
        console.print(f"  {escape(group.label)}")
