"""``rlcli eval``: play a trained run's policy and print its returns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from rlcli.cli.render import RunEnvPackages, progress_bar, user_errors
from rlcli.console import console

if TYPE_CHECKING:
    from rlcli.play.playback import EvalReport


def eval_(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="RUN_DIR_OR_CHECKPOINT",
            help="A run folder (its final.pt, else its newest checkpoint) or a checkpoint file in one.",
        ),
    ],
    episodes: Annotated[int, typer.Option(min=1, metavar="N", help="Episodes to play.")] = 10,
    deterministic: Annotated[
        bool,
        typer.Option(
            "--deterministic/--stochastic",
            metavar="",
            help="The policy's mode (argmax, mean), or actions sampled from it.",
        ),
    ] = True,
    seed: Annotated[
        int | None,
        typer.Option(
            min=0, max=2**31 - 1, metavar="N", help="Seed of the episodes (default: the run's seed + 1000000)."
        ),
    ] = None,
    device: Annotated[
        str | None, typer.Option(metavar="DEVICE", help="auto, cpu, cuda or cuda:N (default: the run's run.device).")
    ] = None,
    video: Annotated[
        Path | None,
        typer.Option(metavar="FILE.mp4", help="Record the first episode here (needs: pip install 'rlcli[video]')."),
    ] = None,
    env_package: RunEnvPackages = None,
    policy: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Also play this file of rlcli export (.onnx or .pt2) on the same episodes, and print both "
            "returns side by side.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", metavar="", help="Print a machine-readable report.")] = False,
) -> None:
    """Evaluate a trained policy with its saved normalization; the run folder is left unchanged."""
    with user_errors(), progress_bar(quiet=as_json) as bar:
        # Imported only now: --help and a bad flag stay free of torch.
        from rlcli.play.playback import evaluate_run

        report = evaluate_run(
            path,
            episodes=episodes,
            deterministic=deterministic,
            seed=seed,
            video=video,
            device=device,
            env_packages=env_package or [],
            policy=policy,
            progress=None if bar is None else lambda done, total: bar("evaluating episodes", done, total),
        )
    if as_json:
        console.print_json(json.dumps(report.to_json()))
        return
    mode = "deterministic" if report.deterministic else "stochastic"
    console.print(f"{escape(report.algo)} on {escape(report.env)}: {mode}, seed {report.seed}", soft_wrap=True)
    console.print(eval_table(report))
    if report.policy_result is not None:
        console.print(episodes_table(report))
        if not report.deterministic:
            console.print("both sampled: their returns agree in distribution, not episode by episode", soft_wrap=True)
    console.print(f"checkpoint: {escape(str(report.checkpoint))}", soft_wrap=True)
    if report.video is not None:
        console.print(f"video: {escape(str(report.video))}", soft_wrap=True)


def eval_table(report: EvalReport) -> Table:
    """One row: episodes, mean, std, min and max return, mean length; with ``--policy``, a row for the run's
    policy and one for the file; for a team, a row for the team and one per group."""
    rows = [("run", report.result)]
    if report.policy_result is not None:
        rows.append(("file", report.policy_result))
    # A team's run: its return (the sum over groups), then each group's of the same episodes.
    if report.result.groups:
        rows = [("team", report.result)] + [
            (f"group {name}", report.result.group(name)) for name in report.result.groups
        ]
    table = Table()
    columns = ("episodes", "mean return", "std", "min", "max", "mean length")
    for name in ("policy", *columns) if len(rows) > 1 else columns:
        table.add_column(name, justify="right")
    for label, result in rows:
        cells = [
            str(result.episodes),
            *(f"{value:,.1f}" for value in (result.mean, result.std, result.min, result.max, result.length_mean)),
        ]
        table.add_row(*([label] if len(rows) > 1 else []), *cells)
    return table


def episodes_table(report: EvalReport) -> Table:
    """Each episode's return from the run's policy and from the exported file, and their difference."""
    # Called only for a report with a file played beside the run's policy.
    assert report.policy_result is not None
    table = Table(title="each episode's return")
    for name in ("episode", "run", "file", "difference"):
        table.add_column(name, justify="right")
    pairs = zip(report.result.returns, report.policy_result.returns)
    for index, (run, file) in enumerate(pairs):
        table.add_row(str(index), f"{run:,.3f}", f"{file:,.3f}", f"{file - run:+.3g}")
    return table
