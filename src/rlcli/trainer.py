"""The training loop: collect -> learn -> check -> log, the same for every algorithm, with hooks."""

from __future__ import annotations

import datetime
import math
import os
import signal
import time
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from rlcli import checkpoint
from rlcli.checkpoint import CheckpointError, Checkpoints
from rlcli.config.dump import to_toml
from rlcli.config.errors import InputError, folder_error
from rlcli.envs import describe_space
from rlcli.envstate import EnvStateError
from rlcli.interrupts import on_stop_signals
from rlcli.loggers import MetricLoggers, Row, make_loggers
from rlcli.provenance import provenance
from rlcli.run import Run
from rlcli.timing import Timer, since_process_start

# Row keys before the algorithm's own METRICS; the timing columns follow them.
BASE_COLUMNS = (
    "iteration", "frames", "wall_time_s", "fps",
    "rollout/episode_return_mean", "rollout/episode_length_mean", "rollout/episodes",
)


# The columns of [eval], when it is on: empty in the rows of iterations without an evaluation.
EVAL_COLUMNS = ("eval/return_mean", "eval/return_std", "eval/length_mean")


def columns(run: Run) -> list[str]:
    """Every column of the run's rows, fixed before the first one: a term that appears
    late (after an off-policy warm-up) still has its column, empty until then."""
    evaluated = EVAL_COLUMNS if run.evaluator is not None else ()
    return [*BASE_COLUMNS, *evaluated, *run.metrics, *(f"time/{phase}_ms" for phase in run.phases)]


class TrainingError(Exception):
    """Training cannot go on: a loss term or the weights became NaN or infinite."""

    def __init__(self, iteration: int, term: str, value: float):
        self.iteration, self.term, self.value = iteration, term, value
        super().__init__(f"iteration {iteration}: {term} is {value}; training stopped "
                         "(final.pt holds the weights of the iteration before)")


@dataclass
class TrainState:
    """What hooks see: the run, its folder and progress so far."""

    run: Run
    run_dir: Path
    timer: Timer
    iteration: int = 0
    frames: int = 0
    started: float = field(default_factory=time.perf_counter)
    wall_time: float = 0.0
    row: Row = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    best_return: float = math.nan
    last_return: float = math.nan
    solved_at: tuple[int, float] | None = None
    started_at: str = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc)
                            .isoformat(timespec="seconds"))
    """When the run started, ISO 8601 in UTC."""
    provenance: dict = field(default_factory=dict)
    """Seed, versions, git commit, overrides: recorded in ``run.json``."""
    startup_s: float | None = None
    """Seconds from process start to the first iteration (Linux only; None elsewhere)."""
    status: str = "running"
    error: str | None = None
    stop_requested: bool = False
    stop_signal: str | None = None
    """The signal that stopped the run: "SIGINT" (Ctrl-C) or "SIGTERM" (a scheduler, docker stop)."""
    checkpoint_frames: int = 0
    """Frames at the last checkpoint saved (or resumed from)."""
    eval_frames: int = 0
    """Frames at the last in-training evaluation."""
    last_eval: dict[str, float] = field(default_factory=dict)
    """The ``eval/*`` terms of the last in-training evaluation."""
    checkpoint_path: Path | None = None
    checkpoint_seconds: float = 0.0
    """Seconds spent writing checkpoints in this process."""
    resumes: list[dict] = field(default_factory=list)
    """One entry per resume of this run: when, from which frames, and how."""
    lock: int | None = None
    """The descriptor holding the run folder's lock until the folder is complete."""
    returns: deque = field(default_factory=deque)
    """The returns of the last ``run.return_window`` episodes, of every rank."""
    lengths: deque = field(default_factory=deque)
    episodes: int = 0
    """Episodes finished so far, by every rank."""
    seen_episodes: int = 0
    """Episodes this rank's envs had finished at the last iteration (their own count)."""

    @property
    def fps(self) -> float:
        return self.frames / self.wall_time if self.wall_time > 0 else 0.0


Hook = Callable[[TrainState], None]


@dataclass
class Hooks:
    """Callables run at named points of the loop, in list order."""

    on_run_start: list[Hook] = field(default_factory=list)
    on_iteration_end: list[Hook] = field(default_factory=list)
    on_run_end: list[Hook] = field(default_factory=list)


class WeightsSnapshot:
    """A preallocated copy of the agent's state (every network, targets and statistics included),
    refreshed in place each iteration so that a failed run can save the last finite weights."""

    def __init__(self, agent: torch.nn.Module):
        self.agent = agent
        self.saved = {name: value.detach().clone() for name, value in agent.state_dict().items()}

    def take(self) -> None:
        torch._foreach_copy_(list(self.saved.values()), list(self.agent.state_dict().values()))

    def restore(self) -> None:
        self.agent.load_state_dict(self.saved)


def weights_finite(agent: torch.nn.Module) -> bool:
    """Whether every parameter is finite (the norm of a tensor with an inf or NaN is not)."""
    norms = torch._foreach_norm([p.detach() for p in agent.parameters()])
    return bool(torch.stack(norms).isfinite().all()) if norms else True


def train(run: Run, *, hooks: Hooks | None = None, resume: str | Path | None = None) -> TrainState:
    """Train ``run`` to its frame budget or stop condition, leaving a complete run folder.

    The folder holds ``config.toml``, ``metrics.csv``/``metrics.jsonl`` (one row
    per logged iteration), ``checkpoints/`` (see ``[checkpoint]``), ``final.pt`` and
    ``run.json`` with the final status: ``completed``, ``solved`` (``run.stop_at_return``
    reached), ``interrupted`` (SIGINT or SIGTERM; a checkpoint is saved first) or ``failed``.

    With ``resume`` (a run folder), ``run`` continues that run in its folder from its latest
    checkpoint. ``run`` must be built from the folder's ``config.toml``, changed at most in
    ``collector.total_frames``, ``logger`` and ``timing``. Every check is made before anything
    in the folder is written.

    Raises:
        TrainingError: a loss became non-finite; the folder is written first.
        ConfigError: ``resume`` is not a run folder that can be resumed with ``run``
            (a CheckpointError or InputError, each naming what is wrong).
    """
    hooks = hooks or Hooks()
    cfg = run.cfg
    main = run.group.is_main
    lock = None
    try:
        if resume is not None:
            lock, restored = _restore(run, Path(resume))
        else:
            restored = None
            lock = checkpoint.lock_folder(run.folder.path) if main else None
        # Rank 0 alone writes the run folder; the others learn where it is.
        run_dir = Path(run.group.broadcast_object(str(run.folder.path) if main else None))
        run.folder.use(run_dir)
        if main:
            checkpoint.write_text(run_dir / "config.toml", to_toml(cfg))
        state = TrainState(run=run, run_dir=run_dir, timer=Timer(run.device, compiled=cfg.run.compile != "off"),
                           provenance=provenance(cfg.run.seed, **run.origin) if main else {}, lock=lock)
        state.returns, state.lengths = deque(maxlen=cfg.run.return_window), deque(maxlen=cfg.run.return_window)
        if restored is not None:
            _continue(state, restored)
        if main:
            _write_status(state)
        loggers = (make_loggers(cfg.logger, run_dir, columns(run),
                                resume=None if restored is None else _kept_rows(state))
                   if main else MetricLoggers([]))
    except OSError as exc:
        _release(lock)
        run.close(orderly=False)
        raise folder_error(cfg.run.output_dir, exc) from None
    except BaseException:
        _release(lock)
        run.close(orderly=False)
        raise
    # The signal handlers stay until the folder is complete: a first SIGINT/SIGTERM during
    # the final save only asks for a stop, which has already happened.
    with _stop_on_ctrl_c(state):
        _loop(run, state, loggers, hooks)
    return state


def _release(lock: int | None) -> None:
    if lock is not None:
        os.close(lock)


def _kept_rows(state: TrainState) -> tuple[int, int]:
    """(iteration, frames) up to which a resumed run keeps its metric rows: the checkpoint's, less
    its own row when a stop wrote it off ``logger.interval`` (an unbroken run has no such row)."""
    off_interval = state.iteration % state.run.cfg.logger.interval != 0
    return (state.iteration - 1 if off_interval else state.iteration), state.frames


def _restore(run: Run, run_dir: Path) -> tuple[int | None, dict]:
    """Check that ``run`` can continue the run in ``run_dir`` and load its latest checkpoint into
    ``run`` (weights, optimizers, replay, envs, generators); returns the folder's lock and the
    checkpoint. Writes nothing.
    """
    from rlcli.config.load import load_config, run_config_file

    what = f"run folder {run_dir}"
    saved = load_config(run_config_file(run_dir))
    problems = checkpoint.resume_config_problems(saved, run.cfg)
    if problems:
        raise InputError(what, "a resumed run keeps its config, but this one changes "
                               + "; ".join(problems)
                               + "; only collector.total_frames, logger.* and timing.* may change on resume")
    lock = checkpoint.lock_folder(run_dir) if run.group.is_main else None
    try:
        return lock, _load_latest(run, run_dir, what)
    except BaseException:
        _release(lock)
        raise


# What _continue and _load_latest read of a checkpoint, checked before anything is restored.
_TRAINER_KEYS = ("wall_time", "best_return", "last_return", "solved_at", "started_at", "timer_totals",
                 "timer_iterations", "eval_frames", "last_eval", "returns", "lengths", "episodes", "provenance",
                 "resumes")
_RANK_KEYS = ("algo_state", "collector", "rng", "seen_episodes")


def _load_latest(run: Run, run_dir: Path, what: str) -> dict:
    latest = Checkpoints(run_dir, run.cfg.checkpoint.keep_last).latest()
    if latest is None:
        raise CheckpointError(what, "holds no checkpoint (checkpoints/ckpt-*.pt), so it cannot be resumed"
                                    + ("; its final.pt holds weights for rlcli eval"
                                       if (run_dir / "final.pt").is_file() else ""))
    payload = checkpoint.read(latest)
    ckpt = f"checkpoint {latest}"
    checkpoint.check_origin(payload, algo=run.cfg.algo.name, env=run.cfg.env.id, spaces=_spaces(run), what=ckpt)
    missing = [key for key in ("ranks", "trainer") if key not in payload]
    missing += [f"trainer.{key}" for key in _TRAINER_KEYS if key not in payload.get("trainer", {})]
    missing += [f"ranks.{key}" for key in _RANK_KEYS
                for rank in payload.get("ranks", []) if not isinstance(rank, dict) or key not in rank][:1]
    if missing:
        raise CheckpointError(ckpt, f"it holds weights but not the training state a resume needs "
                                    f"(no {', '.join(missing)}); rlcli eval can still use it")
    if payload["trainer"]["solved_at"] is not None:
        raise InputError(what, f"it stopped when it reached run.stop_at_return ({run.cfg.run.stop_at_return:g}) "
                               f"at {payload['trainer']['solved_at'][0]:,} frames: there is nothing to continue")
    ranks = payload["ranks"]
    if len(ranks) != run.group.world_size:
        raise InputError(what, f"it was saved by {len(ranks)} rank(s) and is resumed by {run.group.world_size}; "
                               f"resume it with --nproc {len(ranks)} (each rank continues its own envs and buffer)")
    if payload["iteration"] >= run.iterations:
        raise InputError(what, f"its checkpoint is at {payload['frames']:,} frames, which reach "
                               f"collector.total_frames ({run.cfg.collector.total_frames:,}); raise it to train "
                               "on: --set collector.total_frames=N")
    run.folder.use(run_dir)
    mine = ranks[run.group.rank]
    checkpoint.restore_agent(run.algo.agent, payload["agent"], what=ckpt)
    try:
        run.algo.load_state_dict(mine["algo_state"])
        payload["exact_envs"] = run.collector.load_state_dict(mine["collector"])
    except (EnvStateError, KeyError, ValueError, RuntimeError, TypeError) as exc:
        raise CheckpointError(ckpt, f"its training state does not fit this run: {type(exc).__name__}: "
                                    f"{(str(exc).splitlines() or [''])[0][:200]}") from None
    checkpoint.set_rng_state(mine["rng"])
    payload["seen_episodes"] = mine["seen_episodes"]
    payload["path"] = latest
    return payload


def _continue(state: TrainState, payload: dict) -> None:
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
    state.resumes = [*saved["resumes"], {
        "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "from_frames": payload["frames"], "checkpoint": payload["path"].name,
        "exact_envs": payload["exact_envs"],
        "command": state.provenance.get("command"), "overrides": state.provenance.get("overrides"),
    }]
    # The run's own provenance (seed, versions, commit, command) is the one of its start.
    state.provenance = saved["provenance"]
    Checkpoints(state.run_dir, state.run.cfg.checkpoint.keep_last).clean_temporaries()


def _loop(run: Run, state: TrainState, loggers: MetricLoggers, hooks: Hooks) -> None:
    """Iterate until the budget, the stop condition or a stop request; always complete the folder."""
    pending: Row | None = None
    whole = True
    # Whether the ranks end together: at the budget, the stop condition, a joint stop or a joint
    # failure (a non-finite term), not when an error or a second signal hit this rank alone.
    together = True
    try:
        snapshot = WeightsSnapshot(run.algo.agent)
        for hook in hooks.on_run_start:
            hook(state)
        state.started = time.perf_counter() - state.wall_time
        state.startup_s = since_process_start()
        stop = False
        while state.iteration < run.iterations and state.status == "running" and not stop:
            pending = _iteration(run, state, loggers, pending, snapshot)
            for hook in hooks.on_iteration_end:
                hook(state)
            # A signal reaches the ranks at different moments, even while rank 0 saves below: the
            # loop follows only the joint answer, so that every rank stops after the same iteration.
            stop = run.group.any(state.stop_requested)
            if state.status == "running" and not stop and _checkpoint_due(state):
                # The rows up to the checkpoint are on disk before it: a resumed run appends after them.
                if pending is not None:
                    loggers.write(pending)
                    pending = None
                loggers.flush()
                _save_checkpoint(state)
        if stop and state.status == "running":
            state.status = "interrupted"
        if state.status == "running":
            state.status = "completed"
    except KeyboardInterrupt:
        state.status, whole, together = "interrupted", False, False
    except TrainingError as exc:
        state.status, state.error, whole = "failed", str(exc), False
        raise
    except Exception as exc:
        state.status, state.error, whole, together = "failed", f"{type(exc).__name__}: {exc}", False, False
        raise
    finally:
        state.wall_time = time.perf_counter() - state.started
        # The rows not yet written: the one due by logger.interval, and always the last one.
        for row in (pending, state.row):
            if row and row["iteration"] > loggers.last_iteration:
                loggers.write(row)
        loggers.close()
        # A further signal during these saves cuts the one it lands in short (its old file stays)
        # and the folder is still completed.
        # Only after whole iterations: a second signal or an error leaves the last checkpoint as it was.
        saves = [_save_checkpoint] if whole and state.frames > state.checkpoint_frames else []
        saves += [_save_final] if run.group.is_main else []
        try:
            for save in saves:
                try:
                    save(state)
                except KeyboardInterrupt:
                    state.status = "interrupted"
                    state.error = "a further signal cut a final save short; the file before it is kept"
        finally:
            if run.group.is_main:
                _write_status(state)
            _release(state.lock)
            run.close(orderly=together)
        for hook in hooks.on_run_end:
            hook(state)


def _crossed(frames: int, last: int, every: int) -> bool:
    """Whether a multiple of ``every`` (> 0) lies in (``last``, ``frames``]: a periodic action is due."""
    return frames // every > last // every


def _checkpoint_due(state: TrainState) -> bool:
    every = state.run.cfg.checkpoint.every_frames
    return every > 0 and _crossed(state.frames, state.checkpoint_frames, every)


def _save_checkpoint(state: TrainState) -> None:
    """Save everything the run needs to continue exactly, under ``checkpoints/``."""
    started = time.perf_counter()
    run = state.run
    solved = state.solved_at
    # What differs between ranks (envs, buffers, generators) comes from each; rank 0 writes it all.
    ranks = run.group.gather_to_main(checkpoint.to_cpu({
        "algo_state": run.algo.state_dict(replay=run.cfg.checkpoint.replay),
        "collector": run.collector.state_dict(),
        "rng": checkpoint.rng_state(),
        "seen_episodes": state.seen_episodes,
    }))
    if not run.group.is_main:
        state.checkpoint_frames = state.frames
        return
    payload = checkpoint.to_cpu({
        **_header(state),
        "agent": run.algo.agent.state_dict(),
        "ranks": ranks,
        "trainer": {
            "wall_time": time.perf_counter() - state.started,
            "best_return": state.best_return, "last_return": state.last_return,
            "solved_at": list(solved) if solved else None, "started_at": state.started_at,
            "timer_totals": dict(state.timer.totals), "timer_iterations": state.timer.iterations,
            "eval_frames": state.eval_frames, "last_eval": state.last_eval,
            "returns": list(state.returns), "lengths": list(state.lengths), "episodes": state.episodes,
            "provenance": state.provenance, "resumes": state.resumes,
        },
    })
    state.checkpoint_path = Checkpoints(state.run_dir, run.cfg.checkpoint.keep_last).save(payload, state.frames)
    state.checkpoint_frames = state.frames
    state.checkpoint_seconds += time.perf_counter() - started


def _spaces(run: Run) -> dict[str, str]:
    return {"observation": describe_space(run.envs.single_observation_space),
            "action": describe_space(run.envs.single_action_space)}


def _header(state: TrainState) -> dict:
    """What every checkpoint and final.pt starts with: its format and what it was trained for."""
    return {"format": checkpoint.FORMAT, "algo": state.run.cfg.algo.name, "env": state.run.cfg.env.id,
            "spaces": _spaces(state.run), "iteration": state.iteration, "frames": state.frames}


def _stop_on_ctrl_c(state: TrainState) -> AbstractContextManager[None]:
    """Turn the first SIGINT (Ctrl-C) or SIGTERM (a scheduler, ``docker stop``) into a stop at
    the end of the iteration, so that the metrics and weights saved are those of whole
    iterations; a second signal stops at once. Either way the folder is completed.
    """

    def request_stop(signum: int) -> None:
        if state.stop_requested:
            raise KeyboardInterrupt
        state.stop_requested = True
        state.stop_signal = signal.Signals(signum).name

    return on_stop_signals(request_stop)


def _iteration(run: Run, state: TrainState, loggers: MetricLoggers, pending: Row | None,
               snapshot: WeightsSnapshot) -> Row | None:
    """One collect -> learn -> check -> log round; returns the row still to write."""
    timer, algo, cfg = state.timer, run.algo, run.cfg
    with timer.phase("iteration"):
        with timer.phase("collect"):
            batch = run.collector.collect(timer)
        # Kept so that a failed run saves the last weights that gave finite losses.
        snapshot.take()
        with timer.phase("update"):
            terms = _share(state, algo.learn(batch, timer))
        for name, value in terms.items():
            if not math.isfinite(value):
                snapshot.restore()
                raise TrainingError(state.iteration + 1, name, value)
        # A finite loss can still leave non-finite weights (an inf gradient through clipping).
        if not weights_finite(algo.agent):
            snapshot.restore()
            raise TrainingError(state.iteration + 1, "a network weight", math.nan)
        frames = run.collector.frames
        evaluated = run.evaluator is not None and (
            _crossed(frames, state.eval_frames, cfg.eval.every_frames) or state.iteration + 1 == run.iterations)
        if evaluated:
            with timer.phase("eval"):
                # Seeded by the frame count: the same evaluation after a resume as without one.
                state.last_eval = run.evaluator(seed_offset=frames).row()
            state.eval_frames = frames
        with timer.phase("log"):
            # Rows are written one iteration late, so each holds its own log time.
            if pending is not None:
                loggers.write(pending)
    state.phases = timer.end_iteration()
    state.iteration += 1
    state.frames = run.collector.frames
    state.wall_time = time.perf_counter() - state.started
    returns = state.returns
    state.last_return = float(np.mean(returns)) if returns else math.nan
    if math.isfinite(state.last_return) and not state.best_return >= state.last_return:
        state.best_return = state.last_return
    target = cfg.run.stop_at_return
    # "Solved" means the mean of a full window of run.return_window episodes, never of the first few.
    if target is not None and len(returns) == returns.maxlen and state.last_return >= target:
        state.solved_at = (state.frames, state.wall_time)
        state.status = "solved"
    state.row = _row(state, {**(state.last_eval if evaluated else {}), **terms})
    if state.iteration % cfg.logger.interval == 0 or state.status != "running":
        return state.row
    return None


def _share(state: TrainState, terms: dict[str, float]) -> dict[str, float]:
    """What the ranks tell each other after every update, in one collective: returns each loss
    term's mean over the ranks (so that a non-finite term on any rank is non-finite on all and
    every rank stops together), and adds the episodes every rank finished this iteration to the
    run's windows, in rank order.
    """
    envs = state.run.envs
    finished = int(envs.episode_count) - state.seen_episodes
    state.seen_episodes = int(envs.episode_count)
    # The newest `finished` entries of this rank's own window (all of it when more finished).
    window = envs.return_queue.maxlen
    kept = min(finished, len(envs.return_queue))
    # One row per rank: [finished, kept, terms..., returns (window), lengths (window)], zero-padded.
    row = torch.zeros(2 + len(terms) + 2 * window, dtype=torch.float64)
    row[0], row[1] = finished, kept
    row[2:2 + len(terms)] = torch.tensor(list(terms.values()), dtype=torch.float64)
    start = 2 + len(terms)
    if kept:
        row[start:start + kept] = torch.tensor(list(envs.return_queue)[-kept:], dtype=torch.float64)
        row[start + window:start + window + kept] = torch.tensor(list(envs.length_queue)[-kept:],
                                                                 dtype=torch.float64)
    rows = state.run.group.gather_rows(row)
    for rank_row in rows.tolist():
        rank_kept = int(rank_row[1])
        state.returns.extend(rank_row[start:start + rank_kept])
        state.lengths.extend(rank_row[start + window:start + window + rank_kept])
        state.episodes += int(rank_row[0])
    return dict(zip(terms, rows[:, 2:start].mean(0).tolist()))


def _row(state: TrainState, terms: dict[str, float]) -> Row:
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


def _save_final(state: TrainState) -> None:
    run = state.run
    checkpoint.save(state.run_dir / "final.pt", checkpoint.to_cpu({
        **_header(state),
        "agent": run.algo.agent.state_dict(),
        "algo_state": run.algo.state_dict(replay=False),
    }))


def _write_status(state: TrainState) -> None:
    solved = state.solved_at
    checkpoint.write_json(state.run_dir / "run.json", {
        "status": state.status,
        "error": state.error,
        "signal": state.stop_signal,
        "algo": state.run.cfg.algo.name,
        "env": state.run.cfg.env.id,
        "device": str(state.run.device),
        "iterations": state.iteration,
        "frames": state.frames,
        "planned_iterations": state.run.iterations,
        "planned_frames": state.run.planned_frames,
        "world_size": state.run.group.world_size,
        "wall_time_s": round(state.wall_time, 3),
        "fps": round(state.fps, 1),
        "best_return": None if math.isnan(state.best_return) else state.best_return,
        "last_return": None if math.isnan(state.last_return) else state.last_return,
        "solved_at_frames": solved[0] if solved else None,
        "solved_at_seconds": round(solved[1], 3) if solved else None,
        "timing": state.timer.breakdown(state.run.phases),
        "compile_s": round(state.timer.compile_seconds, 3) if state.timer.compiled else None,
        "started_at": state.started_at,
        "startup_s": None if state.startup_s is None else round(state.startup_s, 3),
        "checkpoint": None if state.checkpoint_path is None else {
            "latest": str(state.checkpoint_path.relative_to(state.run_dir)), "frames": state.checkpoint_frames,
            "seconds_writing": round(state.checkpoint_seconds, 3)},
        "resumes": state.resumes,
        **state.provenance,
    })
