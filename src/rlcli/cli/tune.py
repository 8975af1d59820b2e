"""``rlcli tune``: search a preset's hyperparameters with Optuna, one ``rlcli train`` process per trial."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from rlcli.cli.exits import EXIT_INTERRUPTED, EXIT_TERMINATED
from rlcli.cli.render import EnvPackages, Overrides, user_errors
from rlcli.config.errors import InputError
from rlcli.console import console, err_console


def tune(
    preset: Annotated[
        str | None,
        typer.Argument(metavar="PRESET", help="A preset file, or the name of a shipped preset (not with --show)."),
    ] = None,
    space: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="The search space: a TOML file with a [space] table (see the README)."),
    ] = None,
    trials: Annotated[
        int,
        typer.Option(
            metavar="N",
            help="Finished trials (complete or pruned) the study should hold; a second command on the "
            "same study runs the rest.",
        ),
    ] = 24,
    jobs: Annotated[int, typer.Option(metavar="J", help="Trials run at once, each in its own process.")] = 1,
    timeout: Annotated[
        float | None, typer.Option(metavar="S", help="Start no trial after S seconds; the running ones finish.")
    ] = None,
    study: Annotated[
        str | None, typer.Option(metavar="NAME", help="The study to create or join (default: the preset's name).")
    ] = None,
    storage: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="An Optuna storage URL (default sqlite:///OUT/STUDY/study.db): postgresql://..., "
            "mysql://... for several machines, journal:///PATH for a shared filesystem.",
        ),
    ] = None,
    seeds: Annotated[
        int, typer.Option(metavar="K", help="Seeds per trial, one after the other; the objective is their mean.")
    ] = 1,
    sampler: Annotated[str, typer.Option(metavar="NAME", help="tpe, random or cmaes.")] = "tpe",
    pruner: Annotated[str, typer.Option(metavar="NAME", help="median, hyperband or none.")] = "median",
    objective: Annotated[
        str,
        typer.Option(
            metavar="NAME",
            help="return: the last evaluation's mean return (the rolling training return without "
            "[eval]), maximized; frames: frames to run.stop_at_return (the budget when unsolved), minimized; "
            "return/<group>: a team run's group's return (return alone is the sum over its groups).",
        ),
    ] = "return",
    out: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Where the study's folder goes (default: the preset's run.output_dir/tune)."),
    ] = None,
    set_: Overrides = None,
    env_package: EnvPackages = None,
    requeue_failed: Annotated[
        bool, typer.Option("--requeue-failed", metavar="", help="Run each failed trial's parameters once more.")
    ] = False,
    show: Annotated[
        bool,
        typer.Option("--show", metavar="", help="Print the trials of an existing study (--study, --storage) and exit."),
    ] = False,
) -> None:
    """Search hyperparameters with Optuna; each trial is a real rlcli train run."""
    from rlcli.tune import search

    if show:
        with user_errors():
            if study is None or storage is None:
                raise InputError("rlcli tune --show", "needs --study NAME and --storage URL")
            result = search.show(study, storage)
        _render(result)
        return
    with user_errors(preset):
        if preset is None or space is None:
            raise InputError("rlcli tune", "give a PRESET and --space FILE (or --show --study NAME --storage URL)")
        result = search.tune(
            preset,
            space,
            trials=trials,
            jobs=jobs,
            timeout=timeout,
            study=study,
            storage=storage,
            seeds=seeds,
            sampler=sampler,
            pruner=pruner,
            objective=objective,
            out=out,
            set_=set_ or [],
            env_packages=env_package or [],
            requeue=requeue_failed,
            on_event=_progress,
        )
    _render(result)
    if result.stop_signal is not None:
        err_console.print(
            "interrupted: each running trial stopped with a checkpoint and is marked failed in the "
            "study; the same command continues the study"
        )
        raise typer.Exit(EXIT_TERMINATED if result.stop_signal == "SIGTERM" else EXIT_INTERRUPTED)
    if result.ran and result.failed == result.ran:
        err_console.print(f"error: every trial this search ran failed ({result.failed}); see the reasons above")
        raise typer.Exit(1)


def _progress(event: str, payload: Any) -> None:
    if event == "start":
        values = ", ".join(f"{k}={_value(v)}" for k, v in payload.values.items())
        console.print(f"trial {payload.trial.number}: started ({escape(values)})")
    else:
        row = payload
        console.print(
            f"trial {row.number}: {row.state.lower()}"
            + (f", {_value(row.value)}" if row.value is not None else "")
            + (f" ({escape(row.reason)})" if row.reason else "")
        )


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    return str(value)


def _render(result) -> None:
    table = Table(
        title=f"study {result.study}: {len(result.rows)} trials, objective {result.objective} ({result.direction})",
        title_justify="left",
    )
    keys = list(dict.fromkeys(k for row in result.rows for k in row.params))
    for column in ("trial", "state", result.objective, "frames", "seconds", *keys):
        table.add_column(column, justify="left" if column == "state" else "right")
    for row in result.rows:
        state = row.state.lower() + (f": {row.reason}" if row.reason else "")
        table.add_row(
            str(row.number),
            escape(state),
            "-" if row.value is None else _value(row.value),
            "-" if row.frames is None else f"{row.frames:,}",
            "-" if row.seconds is None else f"{row.seconds:.1f}",
            *(escape(_value(row.params[k])) if k in row.params else "-" for k in keys),
            style="bold" if result.best is not None and row.number == result.best.number else None,
        )
    console.print(table)
    if result.best is not None:
        console.print(f"best trial: {result.best.number}, {result.objective} {_value(result.best.value)}")
    if result.importances:
        console.print("importances: " + ", ".join(f"{k} {v:.2f}" for k, v in result.importances.items()))
    if result.best_toml is not None:
        console.print(f"best config: {escape(str(result.best_toml))} (rlcli train {escape(str(result.best_toml))})")
    console.print(f"storage: {escape(result.storage)} (optuna-dashboard {escape(result.storage)})")
