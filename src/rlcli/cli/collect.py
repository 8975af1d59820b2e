"""``rlcli collect``: write a Minari dataset from a trained run (its policy played, or its replay buffer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from rlcli.cli.render import EnvPackages, progress_bar, user_errors
from rlcli.console import console


def collect(
    path: Annotated[
        Path | None,
        typer.Argument(
            metavar="RUN_DIR_OR_CHECKPOINT",
            help="The run whose policy plays: a run folder (its final.pt, else its newest checkpoint) or a "
            "checkpoint file in one.",
        ),
    ] = None,
    out: Annotated[
        str,
        typer.Option(
            metavar="ID_OR_PATH",
            help="The dataset to write: a Minari id (written under MINARI_DATASETS_PATH, "
            "else ~/.minari/datasets), or a path.",
        ),
    ] = "",
    steps: Annotated[int | None, typer.Option(min=1, metavar="N", help="Env steps to record.")] = None,
    deterministic: Annotated[
        bool,
        typer.Option(
            "--deterministic/--stochastic",
            metavar="",
            help="Act with the policy's mode (argmax, mean), or with samples from it.",
        ),
    ] = True,
    epsilon: Annotated[
        float, typer.Option(min=0.0, max=1.0, metavar="E", help="Probability of a uniformly random action instead.")
    ] = 0.0,
    noise: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=10.0,
            metavar="SIGMA",
            help="Box actions: Gaussian noise of SIGMA half-ranges added to each action (then clipped).",
        ),
    ] = 0.0,
    seed: Annotated[int, typer.Option(min=0, max=2**31 - 1, metavar="N", help="Seed of the env and the noise.")] = 0,
    from_replay: Annotated[
        Path | None,
        typer.Option(
            "--from-replay",
            metavar="RUN_DIR",
            help="Write the replay buffer saved with this run's newest checkpoint (or with this checkpoint) instead of "
            "playing a policy.",
        ),
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", metavar="", help="Replace an existing dataset.")] = False,
    device: Annotated[
        str | None, typer.Option(metavar="DEVICE", help="auto, cpu, cuda or cuda:N (default: the run's run.device).")
    ] = None,
    env_package: EnvPackages = None,
    as_json: Annotated[bool, typer.Option("--json", metavar="", help="Print a machine-readable report.")] = False,
) -> None:
    """Write a Minari dataset by playing a trained policy (or from a run's replay buffer); nothing is left
    half-written."""
    with user_errors():
        from rlcli.config.errors import InputError

        if not out:
            raise InputError("--out", "name the dataset to write: --out ID_OR_PATH")
        if (from_replay is None) == (path is None):
            raise InputError(
                "RUN_DIR_OR_CHECKPOINT",
                "give either a run to play (RUN_DIR_OR_CHECKPOINT with --steps) "
                "or --from-replay RUN_DIR, not both or neither",
            )
        from rlcli.datasets.recording import record_policy, record_replay

        if from_replay is not None:
            recorded = record_replay(from_replay, out=out, overwrite=overwrite, env_packages=env_package or [])
        else:
            if steps is None:
                raise InputError("--steps", "say how many env steps to record: --steps N")
            # Exactly one of RUN_DIR_OR_CHECKPOINT and --from-replay was given (checked above).
            assert path is not None
            with progress_bar(quiet=as_json) as bar:
                progress = None if bar is None else (lambda done, total: bar("collect", done, total))
                recorded = record_policy(
                    path,
                    steps=steps,
                    out=out,
                    deterministic=deterministic,
                    epsilon=epsilon,
                    noise=noise,
                    seed=seed,
                    overwrite=overwrite,
                    device=device,
                    env_packages=env_package or [],
                    progress=progress,
                )
    if as_json:
        console.print_json(json.dumps(recorded.to_json()))
        return
    console.print(
        f"wrote {recorded.steps:,} steps in {recorded.episodes:,} episodes (mean return "
        f"{recorded.return_mean:,.1f}) to {escape(str(recorded.path))}",
        soft_wrap=True,
    )
