"""``rlcli export``: write a trained run's policy as an ONNX or torch.export file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from rlcli.cli.render import RunEnvPackages, user_errors
from rlcli.console import console


def export(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="RUN_DIR_OR_CHECKPOINT",
            help="A run folder (its final.pt, else its newest checkpoint) or a checkpoint file in one.",
        ),
    ],
    format: Annotated[
        str,
        typer.Option(
            "--format",
            metavar="FORMAT",
            help="onnx (ONNX Runtime and others; needs: pip install 'rlcli[export]') or pt2 (torch.export.load, "
            "AOTInductor).",
        ),
    ] = "onnx",
    out: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Where to write (default: policy.<format> in the run folder); for a team run, the folder of its "
            "files, policy.<group>.<format> (default: the run folder).",
        ),
    ] = None,
    batch: Annotated[
        str,
        typer.Option(metavar="N|dynamic", help="Rows the file takes per call: a fixed N, or dynamic (any)."),
    ] = "dynamic",
    stochastic: Annotated[
        bool,
        typer.Option(
            "--stochastic",
            metavar="",
            help="Sample the actions from the policy, as rlcli eval --stochastic does (default: its mode).",
        ),
    ] = False,
    env_package: RunEnvPackages = None,
    as_json: Annotated[bool, typer.Option("--json", metavar="", help="Print a machine-readable report.")] = False,
) -> None:
    """Export a trained policy: raw observations in, env actions out, normalization and clipping inside."""
    with user_errors():
        from rlcli.config.errors import InputError
        from rlcli.play.export import exports

        rows = None
        if batch != "dynamic":
            if not batch.isdigit():
                raise InputError("--batch", f"{batch!r}: give a number of rows (1 or more) or dynamic")
            rows = int(batch)
        reports = exports(
            path, format=format, out=out, batch=rows, stochastic=stochastic, env_packages=env_package or []
        )
    if as_json:
        # One file's report as it always was; a team run's, one per file.
        body = reports[0].to_json() if len(reports) == 1 and "group" not in reports[0].metadata else None
        console.print_json(json.dumps(body if body is not None else [report.to_json() for report in reports]))
        return
    for report in reports:
        meta = report.metadata
        who = f" ({escape(meta.get('agent') or 'group ' + meta['group'])})" if "group" in meta else ""
        console.print(
            f"{escape(meta['algo'])} on {escape(meta['env'])}{who}, {meta['frames']:,} frames: "
            f"{escape(', '.join(meta['inputs']))} -> {escape(', '.join(meta['outputs']))} (batch {meta['batch']}"
            f"{', sampled' if meta['stochastic'] else ''})",
            soft_wrap=True,
        )
        console.print(f"{report.format}: {escape(str(report.path))}", soft_wrap=True)
