"""The training loop: collect -> learn -> check -> log, the same for every algorithm, with hooks."""

from __future__ import annotations

import math
import signal
import time
from collections import deque
from contextlib import AbstractContextManager
from pathlib import Path

from rlcli.config.dump import to_toml
from rlcli.config.errors import folder_error
from rlcli.files import write_atomic
from rlcli.loggers import MetricLoggers, Row, make_loggers
from rlcli.play.evaluation import EpisodeProgress
from rlcli.run import Run
from rlcli.runtime.interrupts import on_stop_signals
from rlcli.timing import Timer, since_process_start
from rlcli.trainer import saving
from rlcli.trainer.progress import count_iteration, gather_across_ranks, metrics_row
from rlcli.trainer.provenance import provenance
from rlcli.trainer.resume import continue_from, kept_rows, release, restore
from rlcli.trainer.run_folder import lock_folder
from rlcli.trainer.schedule import checkpoint_due, evaluate_if_due, final_evaluation
from rlcli.trainer.state import (
    Hooks,
    TrainingError,
    TrainState,
    WeightsSnapshot,
    columns,
    weights_finite,
)


def train(run: Run, *, hooks: Hooks | None = None, resume: str | Path | None = None) -> TrainState:
    """Train ``run`` to its frame budget or stop condition, leaving a complete run folder.

    The folder holds ``config.toml``, ``metrics.csv``/``metrics.jsonl`` (one row
    per logged iteration), ``checkpoints/`` (see ``[checkpoint]``), ``final.pt`` and
    ``run.json`` with the final status: ``completed``, ``solved`` (``run.stop_at_return``
    reached), ``interrupted`` (SIGINT or SIGTERM; a checkpoint is saved first), ``pruned`` (a hook's
    stop for the tuner; a checkpoint too) or ``failed``.

    With ``resume`` (a run folder), ``run`` continues that run in its folder from its latest
    checkpoint. ``run`` must be built from the folder's ``config.toml``, changed at most in
    ``collector.total_frames``, ``logger`` and ``timing``. Every check is made before anything
    in the folder is written.

    Raises:
        TrainingError: a loss became non-finite, or an env allowed no action; the folder is written first.
        ConfigError: ``resume`` is not a run folder that can be resumed with ``run``
            (a CheckpointError or InputError, each naming what is wrong).
    """
    state, loggers = _start(run, None if resume is None else Path(resume))
    # The signal handlers stay until the folder is complete: a first SIGINT/SIGTERM during
    # the final save only asks for a stop, which has already happened.
    with _stop_on_ctrl_c(state):
        _loop(run, state, loggers, hooks or Hooks())
    return state


def _start(run: Run, resume: Path | None) -> tuple[TrainState, MetricLoggers]:
    """The run's folder made and locked (``resume``'s reopened, after every check of its checkpoint), its
    config written, the state restored and the loggers open; on any failure the lock is released and
    the run closed."""
    cfg = run.cfg
    main = run.group.is_main
    lock = None
    try:
        if resume is not None:
            lock, restored = restore(run, resume)
        else:
            restored = None
            lock = lock_folder(run.folder.path) if main else None
        # Rank 0 alone writes the run folder; the others learn where it is.
        run_dir = Path(run.group.broadcast_object(str(run.folder.path) if main else None))
        run.folder.use(run_dir)
        if main:
            write_atomic(run_dir / "config.toml", to_toml(cfg))
        state = TrainState(
            run=run,
            run_dir=run_dir,
            timer=Timer(run.device, compiled=cfg.run.compile != "off"),
            provenance=provenance(cfg.run.seed, **run.origin) if main else {},
            lock=lock,
        )
        window = run.source.episode_stats.return_queue.maxlen
        state.returns, state.lengths = deque(maxlen=window), deque(maxlen=window)
        if restored is not None:
            continue_from(state, restored)
        if main:
            saving.write_status(state)
        loggers = (
            make_loggers(
                cfg.logger,
                run_dir,
                columns(run),
                resume=None if restored is None else kept_rows(state),
                config=cfg.model_dump(mode="json"),
            )
            if main
            else MetricLoggers([])
        )
    except OSError as exc:
        release(lock)
        run.close(orderly=False)
        raise folder_error(cfg.run.output_dir, exc) from None
    except BaseException:
        release(lock)
        run.close(orderly=False)
        raise
    return state, loggers


def _loop(run: Run, state: TrainState, loggers: MetricLoggers, hooks: Hooks) -> None:
    """Iterate until the budget, the stop condition or a stop request; always complete the folder."""
    pending: Row | None = None
    whole = True
    # Whether the ranks end together: at the budget, the stop condition, a joint stop or a joint
    # failure (a non-finite term), not when an error or a second signal hit this rank alone.
    together = True
    try:
        snapshot = WeightsSnapshot(run.agent)
        for hook in hooks.on_run_start:
            hook(state)
        state.started = time.perf_counter() - state.wall_time
        state.startup_s = since_process_start()
        # A stop asked before the first iteration (a hook, an early signal) holds on every rank.
        stop = run.group.any(state.stop_requested)
        while state.iteration < run.iterations and state.status == "running" and not stop:
            pending = _iteration(run, state, loggers, pending, snapshot)
            for hook in hooks.on_iteration_end:
                hook(state)
            # A signal reaches the ranks at different moments, even while rank 0 saves below: the
            # loop follows only the joint answer, so that every rank stops after the same iteration.
            stop = run.group.any(state.stop_requested)
            if state.status == "running" and not stop and checkpoint_due(state):
                # The rows up to the checkpoint are on disk before it: a resumed run appends after them.
                if pending is not None:
                    loggers.write(pending)
                    pending = None
                loggers.flush()
                saving.save_checkpoint(state)
        if stop and state.status == "running":
            state.status = state.stop_status
        if state.status == "running":
            state.status = "completed"
    except KeyboardInterrupt:
        state.status, whole, together = "interrupted", False, False
    except TrainingError as exc:
        # A failure one rank met alone (its env's mask) is not joint: the other ranks are waiting for
        # this one in a collective it will never join, and a barrier on leaving would wait with them
        # until the collective timeout. Leaving at once fails their collective now (RankLost).
        state.status, state.error, whole, together = "failed", str(exc), False, exc.rank is None
        raise
    except Exception as exc:
        state.status, state.error, whole, together = "failed", f"{type(exc).__name__}: {exc}", False, False
        raise
    except BaseException:
        # Whatever else unwinds through the loop (a caller's own stop, such as the bench's) cut an
        # iteration short: the folder is completed without a checkpoint of it.
        state.status, whole, together = "interrupted", False, False
        raise
    finally:
        _finish(run, state, loggers, pending, hooks, whole=whole, together=together)
        for hook in hooks.on_run_end:
            hook(state)


def _final_eval_progress(state: TrainState, hooks: Hooks) -> EpisodeProgress | None:
    """What the final evaluation tells after each episode: the hooks ``on_final_eval_episode``, if any."""
    if not hooks.on_final_eval_episode:
        return None

    def tell(done: int, total: int) -> None:
        for hook in hooks.on_final_eval_episode:
            hook(state, done, total)

    return tell


def _finish(
    run: Run,
    state: TrainState,
    loggers: MetricLoggers,
    pending: Row | None,
    hooks: Hooks,
    *,
    whole: bool,
    together: bool,
) -> None:
    """Complete the run folder however the loop ended: the rows not yet written, a last checkpoint
    after ``whole`` iterations, the final weights and status; then leave the group (``together``:
    the ranks ended at the same iteration)."""
    state.wall_time = time.perf_counter() - state.started
    # The rows not yet written: the one due by logger.interval, and always the last one.
    for row in (pending, state.row):
        if row and row["iteration"] > loggers.last_iteration:
            loggers.write(row)
    loggers.flush()
    # A further signal during these saves cuts the one it lands in short (its old file stays)
    # and the folder is still completed.
    # Only after whole iterations: a second signal or an error leaves the last checkpoint as it was.
    saves = [saving.save_checkpoint] if whole and state.frames > state.checkpoint_frames else []
    saves += [saving.save_final] if run.group.is_main else []
    try:
        for save in saves:
            try:
                save(state)
            except KeyboardInterrupt:
                state.status = "interrupted"
                state.error = "a further signal cut a final save short; the file before it is kept"
        # After the weights are safe: the final evaluation is the one step that may take long.
        if run.group.is_main and state.status in ("completed", "solved") and run.cfg.eval.final_episodes:
            final_evaluation(run, state, _final_eval_progress(state, hooks))
    finally:
        if run.group.is_main:
            saving.write_status(state)
        # After the folder is complete: a tracking server receives run.json and final.pt.
        loggers.close()
        release(state.lock)
        run.close(orderly=together)


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


def _iteration(
    run: Run, state: TrainState, loggers: MetricLoggers, pending: Row | None, snapshot: WeightsSnapshot
) -> Row | None:
    """One collect -> learn -> check -> log round; returns the row still to write."""
    timer = state.timer
    with timer.phase("iteration"):
        with timer.phase("collect"):
            run.threads.acting()
            batch = run.source.next_batch(timer)
        # Kept so that a failed run saves the last weights that gave finite losses.
        snapshot.take()
        with timer.phase("update"):
            run.threads.updating()
            terms = run.algo.learn(batch, timer)
        finite = _finite(run, terms)
        # Before the ranks gather: an offline run's episodes are its evaluation's, counted this iteration.
        evaluated = finite and evaluate_if_due(run, state)
        with timer.phase("update"):
            terms = gather_across_ranks(state, terms)
        _check_finite(run, state, terms, snapshot, weights=finite)
        with timer.phase("log"):
            # Rows are written one iteration late, so each holds its own log time.
            if pending is not None:
                loggers.write(pending)
    state.phases = timer.end_iteration()
    count_iteration(run, state)
    # The source's own columns (a team's return per group) are rank 0's, past the finiteness check of the terms.
    state.row = metrics_row(state, {**(state.last_eval if evaluated else {}), **terms, **run.source.row_terms()})
    if state.iteration % run.cfg.logger.interval == 0 or state.status != "running":
        return state.row
    return None


def _finite(run: Run, terms: dict[str, float]) -> bool:
    """Whether this rank's loss terms and weights are all finite (a finite loss can still leave
    non-finite weights: an inf gradient through clipping)."""
    return all(math.isfinite(value) for value in terms.values()) and weights_finite(run.agent)


def _check_finite(
    run: Run, state: TrainState, terms: dict[str, float], snapshot: WeightsSnapshot, *, weights: bool
) -> None:
    """Raise a TrainingError, with the weights of before the update back, when a term averaged over
    the ranks is not finite, or when this rank's terms or weights were not (``weights`` False)."""
    for name, value in terms.items():
        if not math.isfinite(value):
            snapshot.restore()
            raise TrainingError(state.iteration + 1, name, value)
    if not weights:
        snapshot.restore()
        raise TrainingError(state.iteration + 1, "a network weight", math.nan)
