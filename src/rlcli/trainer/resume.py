"""Resuming a run from its folder: every check before anything is written, then the latest
checkpoint loaded into the run and its counters, windows and history taken over."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

from rlcli.collectors.envstate import EnvStateError
from rlcli.config.errors import InputError
from rlcli.run import Run
from rlcli.trainer import checkpoint
from rlcli.trainer.checkpoint import CheckpointError
from rlcli.trainer.checkpoint_folder import Checkpoints
from rlcli.trainer.rng import set_rng_state
from rlcli.trainer.run_folder import lock_folder
from rlcli.trainer.saving import spaces
from rlcli.trainer.state import TrainState

BUDGETS = ("collector.total_frames", "data.total_steps")
"""The budgets a resumed run may raise: an online run's frames, an offline run's gradient steps."""


def resume_config_problems(saved: Any, new: Any) -> list[str]:
    """The fields in which the config ``new`` differs from the run's ``saved`` config, beyond what a
    resumed run may change: the budget (:data:`BUDGETS`), ``logger.*`` and ``timing.*``."""
    allowed_sections = {"logger", "timing"}
    problems = []

    def walk(path: str, before: Any, after: Any) -> None:
        if isinstance(before, dict) and isinstance(after, dict):
            for key in dict.fromkeys([*before, *after]):
                walk(f"{path}.{key}" if path else key, before.get(key), after.get(key))
        elif before != after and path.split(".")[0] not in allowed_sections and path not in BUDGETS:
            problems.append(f"{path} ({before!r} in the run, {after!r} now)")

    walk("", saved.model_dump(mode="json"), new.model_dump(mode="json"))
    return problems


def release(lock: int | None) -> None:
    if lock is not None:
        os.close(lock)


def kept_rows(state: TrainState) -> tuple[int, int]:
    """(iteration, frames) up to which a resumed run keeps its metric rows: the checkpoint's, less
    its own row when a stop wrote it off ``logger.interval`` (an unbroken run has no such row)."""
    off_interval = state.iteration % state.run.cfg.logger.interval != 0
    return (state.iteration - 1 if off_interval else state.iteration), state.frames


def restore(run: Run, run_dir: Path) -> tuple[int | None, dict]:
    """Check that ``run`` can continue the run in ``run_dir`` and load its latest checkpoint into
    ``run`` (weights, optimizers, replay, envs, generators); returns the folder's lock and the
    checkpoint. Writes nothing.
    """
    from rlcli.config.load import load_config
    from rlcli.config.presets import run_config_file

    what = f"run folder {run_dir}"
    saved = load_config(run_config_file(run_dir))
    problems = resume_config_problems(saved, run.cfg)
    if problems:
        raise InputError(
            what,
            "a resumed run keeps its config, but this one changes "
            + "; ".join(problems)
            + "; only collector.total_frames (data.total_steps offline), logger.* and timing.* may "
            "change on resume",
        )
    lock = lock_folder(run_dir) if run.group.is_main else None
    try:
        return lock, _load_latest(run, run_dir, what)
    except BaseException:
        release(lock)
        raise


# What continue_from and _load_latest read of a checkpoint, checked before anything is restored.
_TRAINER_KEYS = (
    "wall_time",
    "best_return",
    "last_return",
    "solved_at",
    "started_at",
    "timer_totals",
    "timer_iterations",
    "eval_frames",
    "last_eval",
    "returns",
    "lengths",
    "episodes",
    "provenance",
    "resumes",
)
_RANK_KEYS = ("algo_state", "collector", "rng", "seen_episodes")


def _load_latest(run: Run, run_dir: Path, what: str) -> dict:
    latest = Checkpoints(run_dir, run.cfg.checkpoint.keep_last).latest()
    if latest is None:
        raise CheckpointError(
            what,
            "holds no checkpoint (checkpoints/ckpt-*.pt), so it cannot be resumed"
            + ("; its final.pt holds weights for rlcli eval" if (run_dir / "final.pt").is_file() else ""),
        )
    payload = checkpoint.read(latest)
    ckpt = f"checkpoint {latest}"
    checkpoint.check_origin(payload, algo=run.cfg.algo.name, env=run.cfg.env.id, spaces=spaces(run), what=ckpt)
    missing = [key for key in ("ranks", "trainer") if key not in payload]
    missing += [f"trainer.{key}" for key in _TRAINER_KEYS if key not in payload.get("trainer", {})]
    missing += [
        f"ranks.{key}"
        for key in _RANK_KEYS
        for rank in payload.get("ranks", [])
        if not isinstance(rank, dict) or key not in rank
    ][:1]
    if missing:
        raise CheckpointError(
            ckpt,
            f"it holds weights but not the training state a resume needs "
            f"(no {', '.join(missing)}); rlcli eval can still use it",
        )
    if payload["trainer"]["solved_at"] is not None:
        raise InputError(
            what,
            f"it stopped when it reached run.stop_at_return ({run.cfg.run.stop_at_return:g}) "
            f"at {payload['trainer']['solved_at'][0]:,} frames: there is nothing to continue",
        )
    ranks = payload["ranks"]
    if len(ranks) != run.group.world_size:
        raise InputError(
            what,
            f"it was saved by {len(ranks)} rank(s) and is resumed by {run.group.world_size}; "
            f"resume it with --nproc {len(ranks)} (each rank continues its own envs and buffer)",
        )
    if payload["iteration"] >= run.iterations:
        budget = "data.total_steps" if run.cfg.offline else "collector.total_frames"
        raise InputError(
            what,
            f"its checkpoint is at {payload['frames']:,} {run.source.unit}, which reach "
            f"{budget} ({run.planned_progress:,}); raise it to train on: --set {budget}=N",
        )
    run.folder.use(run_dir)
    mine = ranks[run.group.rank]
    checkpoint.restore_agent(run.agent, payload["agent"], what=ckpt)
    try:
        run.algo.load_state_dict(mine["algo_state"])
        payload["exact_envs"] = run.source.load_state_dict(mine["collector"])
    except (EnvStateError, KeyError, ValueError, RuntimeError, TypeError) as exc:
        raise CheckpointError(
            ckpt,
            f"its training state does not fit this run: {type(exc).__name__}: "
            f"{(str(exc).splitlines() or [''])[0][:200]}",
        ) from None
    set_rng_state(mine["rng"])
    payload["seen_episodes"] = mine["seen_episodes"]
    payload["path"] = latest
    return payload


def continue_from(state: TrainState, payload: dict) -> None:
    """Take over the counters, windows and history of the checkpoint ``payload``."""
    saved = payload["trainer"]
    state.iteration, state.frames = payload["iteration"], payload["frames"]
    state.wall_time = saved["wall_time"]
    state.best_return, state.last_return = saved["best_return"], saved["last_return"]
    state.solved_at = tuple(saved["solved_at"]) if saved["solved_at"] is not None else None
    state.started_at = saved["started_at"]
    state.timer.totals, state.timer.iterations = dict(saved["timer_totals"]), saved["timer_iterations"]
    state.checkpoint_frames = payload["frames"]
    state.checkpoint_path = payload["path"]
    state.eval_frames, state.last_eval = saved["eval_frames"], dict(saved["last_eval"])
    state.returns.extend(saved["returns"])
    state.lengths.extend(saved["lengths"])
    state.episodes, state.seen_episodes = saved["episodes"], payload["seen_episodes"]
    state.resumes = [
        *saved["resumes"],
        {
            "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "from_frames": payload["frames"],
            "checkpoint": payload["path"].name,
            "exact_envs": payload["exact_envs"],
            "command": state.provenance.get("command"),
            "overrides": state.provenance.get("overrides"),
        },
    ]
    # The run's own provenance (seed, versions, commit, command) is the one of its start.
    state.provenance = saved["provenance"]
    Checkpoints(state.run_dir, state.run.cfg.checkpoint.keep_last).clean_temporaries()
