"""``rlcli train``: train a preset and leave a run folder behind."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from rlcli.cli.exits import EXIT_INTERRUPTED, EXIT_TERMINATED
from rlcli.cli.render import EXIT_BAD_INPUT, EnvPackages, Overrides, user_errors
from rlcli.config.errors import InputError
from rlcli.config.load import Override, load_config
from rlcli.config.presets import find_preset, run_config_file
from rlcli.console import console, err_console
from rlcli.envs import check_run_packages, import_env_packages
from rlcli.runtime.seed_runs import FIGURES, SeedRun, SeedsResult, parse_seeds, train_seeds
from rlcli.tune.reporter import TrialReporter, TrialSpec

EXIT_TRAINING_FAILED = 1
# 128 + SIGTERM, what a shell reports for a process that SIGTERM ended.


def _typed(item: str | Override) -> str:
    """An override as the user typed it."""
    return item.flag if isinstance(item, Override) else f"--set {item}"


def train(
    preset: Annotated[
        str | None,
        typer.Argument(metavar="PRESET", help="A preset file, or the name of a shipped preset (not with --resume)."),
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            metavar="RUN_DIR",
            help="Continue this run folder from its latest checkpoint, with its own config; "
            "--set may change only collector.total_frames (data.total_steps offline), logger.* and timing.*.",
        ),
    ] = None,
    set_: Overrides = None,
    device: Annotated[
        str | None,
        typer.Option(metavar="DEVICE", help="Shorthand for --set run.device=...: auto, cpu, cuda or cuda:N."),
    ] = None,
    seed: Annotated[int | None, typer.Option(metavar="N", help="Shorthand for --set run.seed=N.")] = None,
    seeds: Annotated[
        str | None,
        typer.Option(
            metavar="SPEC", help="Train once per seed, each in its own process: 0,1,2 or 0-4. Not with --seed."
        ),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(metavar="J", help="With --seeds: seeds run at once (default: one per core, at most the seeds)."),
    ] = None,
    out: Annotated[Path | None, typer.Option(metavar="DIR", help="Shorthand for --set run.output_dir=DIR.")] = None,
    env_package: EnvPackages = None,
    nproc: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="Train data-parallel on N local processes started through torchrun's launcher "
            "(gloo on CPU, nccl on CUDA); each steps its share of the envs and batches.",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", metavar="", help="Print only the final summary.")] = False,
    tune_trial: Annotated[
        Path | None, typer.Option(metavar="FILE", hidden=True, help="Run as a trial of rlcli tune, which wrote FILE.")
    ] = None,
) -> None:
    """Train an agent; Ctrl-C or SIGTERM saves a checkpoint and stops; --resume continues."""
    overrides = _overrides(set_, device=device, seed=seed, out=out)
    packages = list(env_package or [])
    with user_errors(preset):
        preset, seed_list = _check_flags(
            preset, resume, seed=seed, seeds=seeds, jobs=jobs, nproc=nproc, packages=packages
        )
    if seed_list is not None:
        # train_seeds imports the packages and checks the config itself, before any seed starts.
        _train_seeds(preset, seed_list, overrides, jobs, packages)
    elif nproc is not None:
        _launch(nproc, preset, resume, overrides, packages, quiet)
    else:
        _train_one(preset, resume, overrides, packages, quiet, tune_trial)


def _overrides(
    set_: list[str] | None, *, device: str | None, seed: int | None, out: Path | None
) -> list[str | Override]:
    """``--set`` items, then the shorthand flags, which win over the file and over --set;
    errors name the flag."""
    overrides: list[str | Override] = list(set_ or [])
    if device is not None:
        overrides.append(Override(f"run.device={json.dumps(device, ensure_ascii=False)}", f"--device {device}"))
    if seed is not None:
        overrides.append(Override(f"run.seed={seed}", f"--seed {seed}"))
    if out is not None:
        overrides.append(Override(f"run.output_dir={json.dumps(str(out), ensure_ascii=False)}", f"--out {out}"))
    return overrides


def _check_flags(
    preset: str | None,
    resume: Path | None,
    *,
    seed: int | None,
    seeds: str | None,
    jobs: int | None,
    nproc: int | None,
    packages: list[str],
) -> tuple[str, list[int] | None]:
    """The config file to train (the run folder's with --resume) and the seeds of --seeds, once
    the flags agree with each other."""
    if (preset is None) == (resume is None):
        raise InputError(
            "rlcli train",
            "give a PRESET to start a run, or --resume RUN_DIR to continue one"
            if preset is None
            else "give a PRESET or --resume RUN_DIR, not both",
        )
    if resume is not None:
        preset = _resume_source(resume, seeds, packages)
    # Exactly one of PRESET and --resume was given (the check above), and --resume gave its config.
    assert preset is not None
    if nproc is not None and seeds is not None:
        raise InputError(
            f"--seeds {seeds}",
            "cannot be combined with --nproc; train each seed with --nproc "
            "in turn, or the seeds side by side in one process each",
        )
    if seeds is None and jobs is None:
        return preset, None
    if seeds is None:
        raise InputError(f"--jobs {jobs}", "needs --seeds SPEC")
    if seed is not None:
        raise InputError(f"--seeds {seeds}", "cannot be combined with --seed; give the seeds in --seeds")
    return preset, parse_seeds(seeds)


def _train_one(
    preset: str,
    resume: Path | None,
    overrides: list[str | Override],
    packages: list[str],
    quiet: bool,
    tune_trial: Path | None = None,
) -> None:
    """Train in this process (or as one rank of a torchrun launch); its status becomes the exit status."""
    with user_errors(preset):
        import_env_packages(packages)
        config_file = find_preset(preset)
        cfg = load_config(config_file, overrides)
        reporter = None if tune_trial is None else TrialReporter(TrialSpec.read(tune_trial))
    # Imported only now: a bad config is reported without loading the training stack.
    from rlcli.run import build_run
    from rlcli.runtime.distributed import RANK_LOST_GRACE_S, RANK_LOST_STATUS, RankLost
    from rlcli.trainer.loop import train as train_run
    from rlcli.trainer.report import ConsoleReport
    from rlcli.training_error import TrainingError

    try:
        with user_errors(preset):
            run = build_run(
                cfg,
                source=preset,
                overrides=[_typed(item) for item in overrides],
                env_packages=packages,
                config_file=config_file,
            )
        # Rank 0 alone reports a data-parallel run.
        hooks = ConsoleReport(console, quiet=quiet).hooks() if run.group.is_main else None
        if reporter is not None and hooks is not None:
            hooks.on_iteration_end.append(reporter)
        with user_errors(preset):
            state = train_run(run, hooks=hooks, resume=resume)
    except TrainingError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(EXIT_TRAINING_FAILED) from None
    except RankLost as exc:
        # The launcher (or torchrun) names the rank that failed first; this one only lost it.
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}")
        time.sleep(RANK_LOST_GRACE_S)
        raise typer.Exit(RANK_LOST_STATUS) from None
    if state.status == "interrupted":
        world = run.group.world_size
        # Rank 0 alone says how the run continues.
        if run.group.is_main and state.checkpoint_path is not None and state.checkpoint_frames == state.frames:
            err_console.print(
                f"interrupted: checkpoint saved; continue with: rlcli train --resume "
                f"{escape(str(state.run_dir))}" + (f" --nproc {world}" if world > 1 else "")
            )
        elif run.group.is_main:
            err_console.print("interrupted: the run folder holds the metrics and weights so far")
        raise typer.Exit(EXIT_TERMINATED if state.stop_signal == "SIGTERM" else EXIT_INTERRUPTED)
    if state.stop_signal is not None:
        # The signal came after the last iteration, during the final evaluation.
        if run.group.is_main:
            err_console.print(f"{state.stop_signal}: the final evaluation was stopped; the run itself is complete")
        raise typer.Exit(EXIT_TERMINATED if state.stop_signal == "SIGTERM" else EXIT_INTERRUPTED)


def _launch(
    nproc: int, preset: str, resume: Path | None, overrides: list[str | Override], packages: list[str], quiet: bool
) -> None:
    """Train on ``nproc`` ranks; their exit becomes this one's."""
    from rlcli.runtime.launch import LaunchInterrupted, RankFailure, train_ranks

    try:
        with user_errors(preset):
            train_ranks(nproc, preset, resume=resume, overrides=overrides, env_packages=packages, quiet=quiet)
    except LaunchInterrupted as exc:
        # Rank 0 has said where its checkpoint is and how to continue.
        raise typer.Exit(EXIT_TERMINATED if exc.signum == signal.SIGTERM else EXIT_INTERRUPTED) from None
    except RankFailure as exc:
        # A rank that met bad input or was interrupted has said so itself; keep its status.
        if exc.exitcode in (EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_TRAINING_FAILED):
            raise typer.Exit(exc.exitcode) from None
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(EXIT_TRAINING_FAILED) from None


def _resume_source(run_dir: Path, seeds: str | None, packages: list[str]) -> str:
    """The config file of the run folder to resume, once the flags agree with resuming it."""
    if seeds is not None:
        raise InputError(f"--seeds {seeds}", "cannot be combined with --resume; resume each seed's folder")
    config_file = run_config_file(run_dir)
    check_run_packages(run_dir, packages)
    return str(config_file)


def _train_seeds(
    preset: str, seeds: list[int], overrides: list[str | Override], jobs: int | None, packages: list[str]
) -> None:
    def show(event: str, run: SeedRun) -> None:
        if event == "start":
            console.print(f"seed {run.seed}: started")
        else:
            console.print(f"seed {run.seed}: {run.status}" + (f" ({escape(run.reason)})" if run.reason else ""))

    with user_errors(preset):
        result = train_seeds(preset, seeds, overrides=overrides, jobs=jobs, env_packages=packages, on_event=show)
    console.print(seeds_table(result))
    console.print(f"seeds folder: {escape(str(result.group))}")
    if result.interrupted:
        err_console.print("interrupted: each started seed's folder holds its metrics and weights so far")
        raise typer.Exit(EXIT_TERMINATED if result.stop_signal == "SIGTERM" else EXIT_INTERRUPTED)
    if result.failed:
        raise typer.Exit(EXIT_TRAINING_FAILED)


def _figure(name: str, value: float | None) -> str:
    """One of the seeds table's FIGURES: frames whole, seconds to 2 decimals, returns to 1."""
    if value is None:
        return "-"
    digits = 0 if name.endswith("frames") else 2 if name.endswith("_s") else 1
    return f"{value:,.{digits}f}"


def seeds_table(result: SeedsResult) -> Table:
    """One row per seed, then the median and interquartile range of each figure."""
    target = result.target
    reached = f">= {target:g}" if target is not None else "target"
    table = Table(
        title=f"{result.preset}: {len(result.runs)} seeds, {result.jobs} at a time"
        + (f", {result.solved}/{len(result.runs)} reached return {reached}" if target is not None else ""),
        title_justify="left",
    )
    for name in (
        "seed",
        "status",
        "frames",
        f"frames to {reached}",
        "train s to it",
        "process s to it",
        "final return",
        "best return",
        "final eval",
        "train s",
    ):
        table.add_column(name, justify="left" if name == "status" else "right")
    for run in result.runs:
        status = run.status + (f": {run.reason}" if run.reason else "")
        table.add_row(str(run.seed), escape(status), *(_figure(f, getattr(run, f)) for f in FIGURES))
    summary = result.summary()
    for key in ("median", "q1", "q3"):
        table.add_row(
            key, "", *(_figure(f, summary[f][key]) for f in FIGURES), style="bold" if key == "median" else "dim"
        )
    return table
