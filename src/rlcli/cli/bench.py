"""``rlcli bench``: throughput of the components and of whole runs, with a baseline gate."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Annotated

import typer
from rich.console import JustifyMethod
from rich.markup import escape
from rich.table import Table

from rlcli.bench import BenchStopped, check_suites
from rlcli.bench.compare import Comparison, compare, load_report, regressions
from rlcli.cli.exits import EXIT_INTERRUPTED, EXIT_TERMINATED
from rlcli.cli.render import user_errors
from rlcli.config.errors import InputError
from rlcli.console import console, err_console
from rlcli.runtime.interrupts import held_stop_signals, on_stop_signals

EXIT_REGRESSION = 1
COLOURS = {"better": "green", "worse": "red", "same": "", "only here": "dim", "only in baseline": "dim"}


def _stopped(signum: int) -> None:
    raise BenchStopped(signum)


def _run(suites: list[str], **options) -> dict:
    """:func:`rlcli.bench.runner.run_bench` under a spinner; a stop signal exits 130 or 143 with no report."""
    try:
        # Imported only now: bad arguments are reported without loading torch. A stop signal during
        # torch's import is held until it is done (torch can abort on one raised inside it).
        with held_stop_signals() as held:
            import torch  # noqa: F401
        if held:
            raise BenchStopped(held[0])
        with on_stop_signals(_stopped):
            from rlcli.bench.runner import run_bench
        with console.status("benchmarking", spinner="dots") as status:
            return run_bench(suites, **options, on_result=lambda r: status.update(f"benchmarking: {r.key}"))
    except BenchStopped as stopped:
        err_console.print(f"bench stopped by {signal.Signals(stopped.signum).name}: no report written")
        raise typer.Exit(EXIT_TERMINATED if stopped.signum == signal.SIGTERM else EXIT_INTERRUPTED) from None


def _figure(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def bench(
    suite: Annotated[
        list[str] | None,
        typer.Option(
            metavar="SUITE",
            help="Suite to run (repeatable; default all): env, collector, advantage, loss, "
            "update, onpolicy, buffer, offpolicy, distributed, export, train.",
        ),
    ] = None,
    device: Annotated[str, typer.Option(metavar="DEVICE", help="auto, cpu, cuda or cuda:N.")] = "auto",
    repeat: Annotated[
        int, typer.Option(min=1, metavar="N", help="Timed repetitions per figure (median reported).")
    ] = 5,
    threads: Annotated[
        str,
        typer.Option(
            metavar="N|auto",
            help='Every preset\'s run.threads: N threads in every phase, or "auto" (each phase on what auto '
            "chooses for it, as rlcli train does).",
        ),
    ] = "1",
    json_out: Annotated[
        Path | None, typer.Option("--json", metavar="FILE", help="Write figures and machine info here.")
    ] = None,
    baseline: Annotated[
        Path | None, typer.Option("--compare", metavar="FILE", help="A report from --json to compare against.")
    ] = None,
    max_regression: Annotated[
        float | None,
        typer.Option(
            min=0, metavar="PCT", help="With --compare: exit 1 when a figure is worse by more than this percent."
        ),
    ] = None,
    noise: Annotated[
        float, typer.Option(min=0, metavar="PCT", help="Changes within this percent count as noise.")
    ] = 5.0,
    quick: Annotated[bool, typer.Option("--quick", metavar="", help="Smaller suites: seconds each.")] = False,
    compile_: Annotated[bool, typer.Option("--compile", metavar="", help="Also torch.compile the losses.")] = False,
) -> None:
    """Measure throughput: env, collector, advantage, loss, update, onpolicy, buffer, offpolicy, distributed, export and train suites."""
    with user_errors():
        check_suites(suite or [])
        if json_out is not None and not json_out.parent.is_dir():
            raise InputError(f"--json {json_out}", f"folder {json_out.parent} does not exist")
        if threads != "auto" and not (threads.isdigit() and int(threads) >= 1):
            raise InputError(f"--threads {threads}", "allowed: auto, or a whole number from 1")
        old = load_report(baseline) if baseline is not None else None
        if max_regression is not None and old is None:
            err_console.print("[bold red]error:[/] --max-regression needs --compare BASELINE.json")
            raise typer.Exit(2)
        report = _run(
            suite or [],
            device=device,
            repeat=repeat,
            threads=threads if threads == "auto" else int(threads),
            quick=quick,
            compile=compile_,
        )
    if json_out is not None:
        # Atomic: a stop while it is written leaves no half report.
        from rlcli.files import write_atomic

        write_atomic(json_out, json.dumps(report, indent=2) + "\n")
    rows = compare(report, old, noise_pct=noise) if old is not None else None
    console.print(_table(report, rows))
    machine = report["machine"]
    console.print(
        f"{machine['cpu']}, {machine['cores']} cores, torch {machine['torch']} "
        f"({machine['torch_threads']} threads), device {machine['device']}"
        + (f" ({machine['cuda_device']})" if machine["cuda_device"] else "")
        + (f", commit {report['commit'][:10]}" if report["commit"] else "")
    )
    if json_out is not None:
        console.print(f"wrote {escape(str(json_out))}")
    if rows is not None and max_regression is not None:
        worse = regressions(rows, max_regression)
        if worse:
            err_console.print(
                f"[bold red]{len(worse)} figure(s) worse than the baseline by more than {max_regression:g}%:[/]"
            )
            for row in worse:
                err_console.print(
                    f"  {escape(row.key)}: {_figure(row.baseline)} -> {_figure(row.current)} "
                    f"{row.unit} ({row.change_pct:+.1f}%)"
                )
            raise typer.Exit(EXIT_REGRESSION)


def _table(report: dict, rows: list[Comparison] | None) -> Table:
    table = Table(title="rlcli bench" + (" (quick)" if report["options"]["quick"] else ""))
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("benchmark", "left"),
        ("parameters", "left"),
        ("median", "right"),
        ("unit", "left"),
        ("spread (min-max)", "right"),
    )
    for column, justify in columns:
        table.add_column(column, justify=justify)
    if rows is not None:
        table.add_column("baseline", justify="right")
        table.add_column("change %", justify="right")
    results = {r["key"]: r for r in report["results"]}
    keys = [r.key for r in rows] if rows is not None else list(results)
    by_key = {r.key: r for r in rows or []}
    for key in keys:
        result = results.get(key)
        name, _, params = key.partition("[")
        cells = [escape(name), escape(params.rstrip("]").replace(",", ", "))]
        if result is not None:
            spread = "-" if result["min"] == result["max"] else f"{_figure(result['min'])}-{_figure(result['max'])}"
            cells += [_figure(result["median"]), result["unit"], spread]
        else:
            cells += ["-", by_key[key].unit, "-"]
        if rows is not None:
            row = by_key[key]
            colour = COLOURS[row.verdict]
            pct = "-" if row.change_pct is None else f"{row.change_pct:+.1f}%"
            cells += [_figure(row.baseline), f"[{colour}]{pct}[/]" if colour else pct]
        table.add_row(*cells)
    return table
