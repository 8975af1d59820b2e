"""What the loop writes to the run folder: checkpoints (every rank's state, written by rank 0),
``final.pt`` and ``run.json``."""

from __future__ import annotations

import json
import math
import time

from rlcli.envs import describe_space
from rlcli.files import write_atomic
from rlcli.run import Run
from rlcli.trainer import checkpoint
from rlcli.trainer.checkpoint_folder import Checkpoints
from rlcli.trainer.rng import rng_state
from rlcli.trainer.state import TrainState


def save_checkpoint(state: TrainState) -> None:
    """Save everything the run needs to continue exactly, under ``checkpoints/``."""
    started = time.perf_counter()
    run = state.run
    solved = state.solved_at
    # What differs between ranks (envs, buffers, generators) comes from each; rank 0 writes it all.
    ranks = run.group.gather_to_main(
        checkpoint.to_cpu(
            {
                "algo_state": run.algo.state_dict(replay=run.cfg.checkpoint.replay),
                "collector": run.source.state_dict(),
                "rng": rng_state(),
                "seen_episodes": state.seen_episodes,
            }
        )
    )
    if not run.group.is_main:
        state.checkpoint_frames = state.frames
        return
    payload = checkpoint.to_cpu(
        {
            **header(state),
            "agent": run.algo.agent.state_dict(),
            "ranks": ranks,
            "trainer": {
                "wall_time": time.perf_counter() - state.started,
                "best_return": state.best_return,
                "last_return": state.last_return,
                "solved_at": list(solved) if solved else None,
                "started_at": state.started_at,
                "timer_totals": dict(state.timer.totals),
                "timer_iterations": state.timer.iterations,
                "eval_frames": state.eval_frames,
                "last_eval": state.last_eval,
                "returns": list(state.returns),
                "lengths": list(state.lengths),
                "episodes": state.episodes,
                "provenance": state.provenance,
                "resumes": state.resumes,
            },
        }
    )
    state.checkpoint_path = Checkpoints(state.run_dir, run.cfg.checkpoint.keep_last).save(payload, state.frames)
    state.checkpoint_frames = state.frames
    state.checkpoint_seconds += time.perf_counter() - started


def spaces(run: Run) -> dict[str, str]:
    return {
        "observation": describe_space(run.source.observation_space),
        "action": describe_space(run.source.action_space),
    }


def header(state: TrainState) -> dict:
    """What every checkpoint and final.pt starts with: its format and what it was trained for."""
    return {
        "format": checkpoint.FORMAT,
        "algo": state.run.cfg.algo.name,
        "env": state.run.cfg.env.id,
        "spaces": spaces(state.run),
        "iteration": state.iteration,
        "frames": state.frames,
    }


def save_final(state: TrainState) -> None:
    run = state.run
    checkpoint.save(
        state.run_dir / "final.pt",
        checkpoint.to_cpu(
            {
                **header(state),
                "agent": run.algo.agent.state_dict(),
                "algo_state": run.algo.state_dict(replay=False),
            }
        ),
    )


def write_status(state: TrainState) -> None:
    solved = state.solved_at
    status = {
        "status": state.status,
        "error": state.error,
        "signal": state.stop_signal,
        "algo": state.run.cfg.algo.name,
        "env": state.run.cfg.env.id,
        "device": str(state.run.device),
        # Where the action masks came from ("info", "observation"), as [env] action_mask resolved.
        "action_mask": getattr(state.run.source, "action_mask", None),
        "iterations": state.iteration,
        "frames": state.frames,
        "planned_iterations": state.run.iterations,
        "planned_frames": state.run.planned_progress,
        "world_size": state.run.group.world_size,
        "threads": state.run.threads.to_json(),
        "precision": state.run.cfg.run.precision,
        "wall_time_s": round(state.wall_time, 3),
        "fps": round(state.fps, 1),
        "best_return": None if math.isnan(state.best_return) else state.best_return,
        "last_return": None if math.isnan(state.last_return) else state.last_return,
        # A team run's: each group's rolling return (rollout/episode_return_mean/<group>); empty otherwise.
        "last_group_returns": {
            key.rpartition("/")[2]: None if math.isnan(value) else value
            for key, value in state.run.source.row_terms().items()
        },
        "last_eval": {key.removeprefix("eval/"): value for key, value in state.last_eval.items()} or None,
        "final_eval": state.final_eval,
        "solved_at_frames": solved[0] if solved else None,
        "solved_at_seconds": round(solved[1], 3) if solved else None,
        "timing": state.timer.breakdown(state.run.phases),
        "compile_s": round(state.timer.compile_seconds, 3) if state.timer.compiled else None,
        "started_at": state.started_at,
        "startup_s": None if state.startup_s is None else round(state.startup_s, 3),
        "checkpoint": None
        if state.checkpoint_path is None
        else {
            "latest": str(state.checkpoint_path.relative_to(state.run_dir)),
            "frames": state.checkpoint_frames,
            "seconds_writing": round(state.checkpoint_seconds, 3),
        },
        "resumes": state.resumes,
        **state.provenance,
    }
    write_atomic(state.run_dir / "run.json", json.dumps(status, indent=2) + "\n")
