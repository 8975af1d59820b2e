"""What an iteration adds to the run's state: its counters, the episodes and loss terms every rank
reports, and the metrics row they make."""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from rlcli.loggers import Row
from rlcli.run import Run
from rlcli.trainer.state import TrainState


def count_iteration(run: Run, state: TrainState) -> None:
    """Advance the counters after an iteration, and mark the run solved once the rolling return
    reaches ``run.stop_at_return``."""
    state.iteration += 1
    state.frames = run.source.progress
    state.wall_time = time.perf_counter() - state.started
    returns = state.returns
    state.last_return = float(np.mean(returns)) if returns else math.nan
    if math.isfinite(state.last_return) and not state.best_return >= state.last_return:
        state.best_return = state.last_return
    target = run.cfg.run.stop_at_return
    # "Solved" means the mean of a full window of run.return_window episodes, never of the first few.
    if target is not None and len(returns) == returns.maxlen and state.last_return >= target:
        state.solved_at = (state.frames, state.wall_time)
        state.status = "solved"


def gather_across_ranks(state: TrainState, terms: dict[str, float]) -> dict[str, float]:
    """What the ranks tell each other after every update, in one collective: returns each loss
    term's mean over the ranks (so that a non-finite term on any rank is non-finite on all and
    every rank stops together), and adds the episodes every rank finished this iteration to the
    run's windows, in rank order.
    """
    envs = state.run.source.episode_stats
    finished = int(envs.episode_count) - state.seen_episodes
    state.seen_episodes = int(envs.episode_count)
    # The newest `finished` entries of this rank's own window (all of it when more finished).
    window = envs.return_queue.maxlen
    # Episodes keeps a bounded window (gymnasium's buffer_length, the evaluation's episodes).
    assert window is not None
    kept = min(finished, len(envs.return_queue))
    # One row per rank: [finished, kept, terms..., returns (window), lengths (window)], zero-padded.
    row = torch.zeros(2 + len(terms) + 2 * window, dtype=torch.float64)
    row[0], row[1] = finished, kept
    row[2 : 2 + len(terms)] = torch.tensor(list(terms.values()), dtype=torch.float64)
    start = 2 + len(terms)
    if kept:
        row[start : start + kept] = torch.tensor(list(envs.return_queue)[-kept:], dtype=torch.float64)
        row[start + window : start + window + kept] = torch.tensor(list(envs.length_queue)[-kept:], dtype=torch.float64)
    rows = state.run.group.gather_rows(row)
    for rank_row in rows.tolist():
        rank_kept = int(rank_row[1])
        state.returns.extend(rank_row[start : start + rank_kept])
        state.lengths.extend(rank_row[start + window : start + window + rank_kept])
        state.episodes += int(rank_row[0])
    return dict(zip(terms, rows[:, 2:start].mean(0).tolist()))


def metrics_row(state: TrainState, terms: dict[str, float]) -> Row:
    lengths = state.lengths
    row: Row = {
        "iteration": state.iteration,
        "frames": state.frames,
        "wall_time_s": round(state.wall_time, 4),
        "fps": round(state.fps, 1),
        "rollout/episode_return_mean": state.last_return,
        "rollout/episode_length_mean": float(np.mean(lengths)) if lengths else math.nan,
        "rollout/episodes": state.episodes,
        **terms,
    }
    for phase in state.run.phases:
        row[f"time/{phase}_ms"] = round(state.phases.get(phase, 0.0) * 1000, 3)
    return row
