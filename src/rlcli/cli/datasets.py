"""``rlcli datasets make`` and ``rlcli datasets list``: the datasets rlcli makes itself (those the shipped
Pendulum presets read, which no server holds)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from rlcli.cli.render import progress_bar, user_errors
from rlcli.config.errors import InputError
from rlcli.config.recipes import DEFAULT_STEPS, RECIPES, lookup
from rlcli.console import console

datasets_app = typer.Typer(
    help="Make the datasets the shipped offline presets read (rlcli datasets list names them).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@datasets_app.command("make")
def make(
    ids: Annotated[
        list[str] | None,
        typer.Argument(metavar="ID...", help="The datasets to make, by Minari id: rlcli datasets list names them."),
    ] = None,
    steps: Annotated[
        int, typer.Option(min=1, max=100_000_000, metavar="N", help="Env steps of each played dataset.")
    ] = DEFAULT_STEPS,
    seed: Annotated[
        int, typer.Option(min=0, max=2**31 - 1, metavar="N", help="Seed of the training run and of every recording.")
    ] = 0,
    frames: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=1_000_000,
            metavar="N",
            help="Frames the training run trains instead of the recipe's (rlcli datasets list says it); fewer make "
            "a weaker expert, and may never reach the medium return.",
        ),
    ] = None,
    every: Annotated[
        bool, typer.Option("--all", metavar="", help="Make every dataset rlcli datasets list names, in one go.")
    ] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", metavar="", help="Replace datasets already there.")] = False,
    as_json: Annotated[bool, typer.Option("--json", metavar="", help="Print a machine-readable report.")] = False,
) -> None:
    """Make datasets with rlcli itself, under MINARI_DATASETS_PATH (else ~/.minari/datasets), where
    [data] dataset finds them by id.

    Only the ids named are made. Those that share a training run (pendulum/expert-v0, pendulum/medium-v0
    and pendulum/medium-replay-v0 all come from one sac_pendulum run) share it when named together:
    name them in one command (or give --all) to train once. A dataset made alone is the same as one made beside its
    siblings (same seed, same run). Every check is made before the training starts, and a dataset is
    written whole or not at all.
    """
    with user_errors():
        if every and ids:
            raise InputError("--all", "give the ids to make or --all, not both")
        names = list(RECIPES) if every else ids or []
        lookup(names)
        # Only now the training stack: a mistyped id is answered without importing torch.
        from rlcli.datasets.make import make_datasets

        with progress_bar(quiet=as_json) as progress:
            made = make_datasets(names, steps=steps, seed=seed, frames=frames, overwrite=overwrite, progress=progress)
    if as_json:
        console.print_json(json.dumps(made.to_json()))
        return
    for trained in made.trained:
        console.print(f"trained {escape(trained.describe())}", soft_wrap=True)
    for name, recorded in made.written.items():
        console.print(
            f"{escape(name)}: {recorded.steps:,} steps in {recorded.episodes:,} episodes "
            f"(mean return {recorded.return_mean:,.1f})",
            soft_wrap=True,
        )
    console.print(
        f"written under {escape(str(made.root))} (set MINARI_DATASETS_PATH to keep them elsewhere)", soft_wrap=True
    )


@datasets_app.command("list")
def list_() -> None:
    """Print the datasets rlcli datasets make makes, and how it makes each."""
    table = Table("id", "made from")
    for recipe in RECIPES.values():
        table.add_row(recipe.id, recipe.describe())
    console.print(table)
    for training in dict.fromkeys(r.training for r in RECIPES.values() if r.training is not None):
        console.print(f"The {training.preset} run: {training.describe()}.", soft_wrap=True)
    console.print(f"A played dataset is --steps steps long ({DEFAULT_STEPS:,} unless given).")
