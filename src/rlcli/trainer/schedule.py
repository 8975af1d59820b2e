"""What the loop does on a schedule: the in-training evaluation and the checkpoint when their interval
(``every_frames`` online, ``every_steps`` offline) has come round, and the final evaluation of a run."""

from __future__ import annotations

import time

from rlcli.play.evaluation import SEED_OFFSET, EpisodeProgress, Stopped
from rlcli.play.team_evaluation import evaluator as make_evaluator
from rlcli.run import Run
from rlcli.trainer.state import TrainState


def evaluate_if_due(run: Run, state: TrainState) -> bool:
    """Evaluate the policy when ``eval.every_frames`` (``every_steps`` offline) has come round, and after
    the last iteration;
    returns whether it did."""
    frames, every = run.source.progress, run.cfg.eval.interval(offline=run.cfg.offline)
    if run.evaluator is None or not (
        (every > 0 and _crossed(frames, state.eval_frames, every)) or state.iteration + 1 == run.iterations
    ):
        return False
    with state.timer.phase("eval"):
        run.threads.acting()
        # Seeded by the frame count: the same evaluation after a resume as without one.
        state.last_eval = run.evaluator(seed_offset=frames).row()
    state.eval_frames = frames
    return True


def final_evaluation(run: Run, state: TrainState, progress: EpisodeProgress | None = None) -> None:
    """Play ``eval.final_episodes`` episodes with the final weights (``state.final_eval``): the episodes
    ``rlcli eval RUN --episodes N`` plays (its default seed, ``eval.num_envs`` envs side by side), ``progress``
    told the episodes finished. A stop signal ends it without a result; an env that fails is
    reported in ``error``."""
    cfg = run.cfg
    started = time.perf_counter()
    try:
        evaluator = make_evaluator(
            run.algo.agent,
            cfg.env,
            episodes=cfg.eval.final_episodes,
            deterministic=cfg.eval.deterministic,
            seed=cfg.run.seed + SEED_OFFSET,
            device=run.device,
            num_envs=cfg.eval.envs(cfg.env.num_envs),
        )
    except Exception as exc:  # noqa: BLE001 - the run is complete; its evaluation is reported, not raised
        state.final_eval = {"error": f"{type(exc).__name__}: {exc}"}
        return
    agent = run.agent
    training = agent.training
    agent.eval()
    run.threads.acting()
    try:
        result = evaluator(stop=lambda: state.stop_requested, progress=progress)
        state.final_eval = {
            "episodes": result.episodes,
            "mean": result.mean,
            "std": result.std,
            "min": result.min,
            "max": result.max,
            "length_mean": result.length_mean,
            "deterministic": cfg.eval.deterministic,
            "seconds": round(time.perf_counter() - started, 3),
        }
    except Stopped:
        state.final_eval = {"error": f"stopped by {state.stop_signal}"}
    except Exception as exc:  # noqa: BLE001
        state.final_eval = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        agent.train(training)
        evaluator.close()


def _crossed(frames: int, last: int, every: int) -> bool:
    """Whether a multiple of ``every`` (> 0) lies in (``last``, ``frames``]: a periodic action is due."""
    return frames // every > last // every


def checkpoint_due(state: TrainState) -> bool:
    cfg = state.run.cfg
    every = cfg.checkpoint.interval(offline=cfg.offline)
    return every > 0 and _crossed(state.frames, state.checkpoint_frames, every)
