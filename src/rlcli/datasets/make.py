"""``rlcli datasets make``: the datasets of :data:`rlcli.config.recipes.RECIPES`, made with rlcli itself.

The datasets asked for that share a training run share one: its preset trains in a temporary folder
(removed at the end), and each dataset is then played from it or read from its replay buffer with the
recording code of ``rlcli collect``. Every check that can fail (an unknown id, minari missing, a dataset
already there, a folder that cannot be written) is made before the training starts."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlcli.config.errors import InputError
from rlcli.config.load import load_config
from rlcli.config.recipes import DEFAULT_STEPS, Recipe, Training, lookup
from rlcli.config.schema import EnvConfig
from rlcli.datasets.find import datasets_root, import_minari
from rlcli.datasets.recording import Recorded, record_policy, record_random, record_replay
from rlcli.run import build_run
from rlcli.trainer.loop import train
from rlcli.trainer.state import Hooks, TrainState

Progress = Callable[[str, int, int], None]
"""Called with (what is under way, units done, units planned): the training run's frames, then each dataset's
steps."""


@dataclass(frozen=True)
class Trained:
    """A finished training run of a :class:`Training`: its folder, frames and last evaluation (the expert),
    and the checkpoint picked as the medium policy with its frames and evaluation (None when no medium
    dataset was asked, so none was looked for)."""

    preset: str
    run_dir: Path
    frames: int
    last_return: float
    medium: Path | None = None
    medium_frames: int | None = None
    medium_return: float | None = None

    def describe(self) -> str:
        text = f"{self.preset}: {self.frames:,} frames, last evaluation {self.last_return:.1f}"
        if self.medium_frames is not None:
            text += f"; medium: the checkpoint at {self.medium_frames:,} frames, evaluation {self.medium_return:.1f}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "preset": self.preset,
            "frames": self.frames,
            "last_return": self.last_return,
            "medium_frames": self.medium_frames,
            "medium_return": self.medium_return,
        }


@dataclass(frozen=True)
class Made:
    """What :func:`make_datasets` wrote: each dataset by id, the training runs behind them, and where."""

    written: dict[str, Recorded]
    trained: list[Trained]
    root: Path

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "trained": [t.to_json() for t in self.trained],
            "datasets": {name: recorded.to_json() for name, recorded in self.written.items()},
        }


def make_datasets(
    ids: Sequence[str],
    *,
    steps: int = DEFAULT_STEPS,
    seed: int = 0,
    frames: int | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> Made:
    """Make the datasets ``ids`` (Minari ids of :data:`~rlcli.config.recipes.RECIPES`) under
    :func:`~rlcli.datasets.find.datasets_root`, and only those: a sibling that shares their training run is
    made only when asked too (with the same seed it comes out the same either way).

    ``steps`` is each played dataset's length, ``seed`` seeds the training run and every recording, and
    ``frames`` replaces the training run's budget (:attr:`Training.frames`).

    Raises:
        InputError: an unknown id, minari missing, a dataset already there (without ``overwrite``), a
            folder that cannot be written, or a training run whose evaluation never reached the medium
            return (no medium policy); nothing is written then.
        KeyboardInterrupt: a signal stopped the training run; nothing was written.
    """
    recipes = lookup(list(ids))
    import_minari("rlcli datasets make")
    root = datasets_root()
    check_targets(root, recipes, overwrite=overwrite)
    plans = list(dict.fromkeys(r.training for r in recipes if r.training is not None))
    with tempfile.TemporaryDirectory(prefix="rlcli-datasets-") as scratch:
        trained: dict[Training, Trained] = {}
        for plan in plans:
            medium = any(r.kind in ("medium", "medium-replay") for r in recipes if r.training == plan)
            trained[plan] = train_for(plan, Path(scratch), seed=seed, frames=frames, medium=medium, progress=progress)
        written = {
            r.id: _record(
                r,
                None if r.training is None else trained[r.training],
                steps=steps,
                seed=seed,
                overwrite=overwrite,
                progress=progress,
            )
            for r in recipes
        }
    return Made(written, list(trained.values()), root)


def check_targets(root: Path, recipes: list[Recipe], *, overwrite: bool) -> None:
    """Raise an InputError when a dataset of ``recipes`` is already under ``root`` (without ``overwrite``)
    or ``root`` cannot be written: before a training run of minutes, not after it."""
    there = [r.id for r in recipes if (root / r.id).exists()]
    if there and not overwrite:
        raise InputError(
            there[0],
            f"{root / there[0]} already exists; pass --overwrite to replace it "
            f"(rlcli datasets make --overwrite {' '.join(there)}), or set MINARI_DATASETS_PATH to write elsewhere",
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
        # A real write: permission bits say nothing for root, nor for a read-only mount.
        with tempfile.TemporaryFile(dir=root):
            pass
    except OSError as exc:
        raise InputError(
            f"datasets folder {root}",
            f"cannot write there: {exc.strerror or exc}; set MINARI_DATASETS_PATH to a folder you can write "
            "(it is where [data] dataset finds them by id)",
        ) from None


def train_for(
    plan: Training, scratch: Path, *, seed: int, frames: int | None, medium: bool, progress: Progress | None
) -> Trained:
    """Train ``plan``'s preset under ``scratch`` and, with ``medium``, pick the first checkpoint whose
    evaluation reached :attr:`Training.medium_return`.

    Raises:
        InputError: with ``medium``, no evaluation reached the medium return.
        KeyboardInterrupt: a signal stopped the run.
    """
    budget = frames or plan.frames
    cfg = load_config(
        plan.preset,
        [
            f"run.output_dir={json.dumps(str(scratch))}",
            f"run.seed={seed}",
            "timing.enabled=false",
            # Pendulum's best return is 0: a threshold never met trains the whole budget.
            "run.stop_at_return=0.0",
            f"collector.total_frames={budget}",
            f"eval.every_frames={plan.every_frames}",
            f"eval.episodes={plan.eval_episodes}",
            # The datasets come from the weights saved before it: a final evaluation would only cost time.
            "eval.final_episodes=0",
            f"checkpoint.every_frames={plan.every_frames}",
            # Every checkpoint is kept until the medium one is known.
            "checkpoint.keep_last=1000",
        ],
    )
    picked: dict[str, float] = {}

    def watch(state: TrainState) -> None:
        ret = state.last_eval.get("eval/return_mean", float("-inf"))
        # Only an evaluation of this very iteration: its checkpoint is saved right after it.
        if not picked and state.eval_frames == state.frames and ret >= plan.medium_return:
            picked.update(frames=state.frames, ret=ret)
        if progress is not None:
            progress(f"train {plan.preset}", state.frames, budget)

    state = train(build_run(cfg), hooks=Hooks(on_iteration_end=[watch]))
    if state.status not in ("completed", "solved"):
        raise KeyboardInterrupt
    last = state.last_eval.get("eval/return_mean", float("nan"))
    if not medium:
        return Trained(plan.preset, state.run_dir, state.frames, last)
    if not picked:
        longer = f"raise --frames (the recipe's is {plan.frames:,})" if frames else "try another --seed"
        raise InputError(
            "--frames" if frames else "--seed",
            f"no evaluation of the {plan.preset} run reached {plan.medium_return:g} in {state.frames:,} frames "
            f"(the last: {last:.1f}), so there is no medium policy and nothing was written; {longer}",
        )
    checkpoint = state.run_dir / "checkpoints" / f"ckpt-{int(picked['frames']):012d}.pt"
    return Trained(plan.preset, state.run_dir, state.frames, last, checkpoint, int(picked["frames"]), picked["ret"])


def _record(
    recipe: Recipe, trained: Trained | None, *, steps: int, seed: int, overwrite: bool, progress: Progress | None
) -> Recorded:
    """Write ``recipe``'s dataset from ``trained`` (None for random actions)."""
    step = None if progress is None else (lambda done, total: progress(recipe.id, done, total))
    if trained is None:
        return record_random(
            # mypy (no pydantic plugin) reads no default from a positional Field(default, ...); every other field has one.
            EnvConfig(id=recipe.env),  # type: ignore[call-arg]
            steps=steps,
            out=recipe.id,
            seed=seed,
            overwrite=overwrite,
            progress=step,
        )
    # train_for picks a medium checkpoint for a plan that a medium or medium-replay recipe uses.
    if recipe.kind == "medium-replay":
        assert trained.medium is not None
        return record_replay(trained.medium, out=recipe.id, overwrite=overwrite)
    source = trained.run_dir if recipe.kind == "expert" else trained.medium
    assert source is not None
    return record_policy(
        source, steps=steps, out=recipe.id, noise=recipe.noise, seed=seed, overwrite=overwrite, progress=step
    )
