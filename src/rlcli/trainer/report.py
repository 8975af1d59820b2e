"""Console output of a training run: start line, timing tables, progress bar, summary."""

from __future__ import annotations

import math
import time

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn
from rich.table import Table

from rlcli.trainer.state import Hooks, TrainState


def _fmt_return(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1f}"


def _rounded_up(field: str, total: int, planned: int, iterations: int, unit: str, per: int) -> str:
    """Why ``planned`` exceeds the budget ``field`` = ``total`` (rounded up to whole ``unit``), or nothing."""
    if planned == total:
        return ""
    return f" ({field} {total:,} rounded up to {iterations:,} whole {unit} of {per:,})"


def frames_planned(collector) -> str:
    """The frames a run trains, and why when that is more than ``total_frames``."""
    return f"{collector.frames:,} frames" + _rounded_up(
        "total_frames",
        collector.total_frames,
        collector.frames,
        collector.iterations,
        "batches",
        collector.frames_per_batch,
    )


def steps_planned(data) -> str:
    """The gradient steps an offline run takes (``[data]``), and why when that is more than ``total_steps``."""
    return f"{data.steps:,} gradient steps from {data.dataset}" + _rounded_up(
        "total_steps", data.total_steps, data.steps, data.iterations, "iterations", data.steps_per_iteration
    )


def _return_label(state: TrainState) -> str:
    """What the return column averages: the last ``run.return_window`` training episodes, or offline
    the last evaluation."""
    return "last evaluation" if state.run.cfg.offline else f"last {state.run.cfg.run.return_window}"


def timing_table(state: TrainState) -> Table:
    """Phase, ms this iteration, mean ms so far and share of the iteration."""
    timer = state.timer
    total = state.phases.get("iteration", 0.0) or 1e-12
    table = Table(
        title=f"iteration {state.iteration}/{state.run.iterations}",
        caption=(
            f"{state.run.source.unit} {state.frames:,}  ·  {state.fps:,.0f}/s  ·  "
            f"return ({_return_label(state)}) {_fmt_return(state.last_return)}"
        ),
        title_justify="left",
        caption_justify="left",
        min_width=64,
    )
    table.add_column("phase")
    table.add_column("ms", justify="right")
    table.add_column("mean ms", justify="right")
    table.add_column("share", justify="right")
    for phase in state.run.phases:
        if phase not in timer.totals:
            continue
        seconds = state.phases.get(phase, 0.0)
        label = ("  " + phase.split(".", 1)[1]) if "." in phase else phase
        table.add_row(label, f"{seconds * 1e3:.2f}", f"{timer.mean(phase) * 1e3:.2f}", f"{100 * seconds / total:.1f}%")
    return table


def run_timing_table(state: TrainState) -> Table:
    """Where the whole run's time went: mean ms per iteration and share, per phase."""
    table = Table(title=f"time per phase over {state.timer.iterations:,} iterations", title_justify="left")
    table.add_column("phase")
    table.add_column("mean ms", justify="right")
    table.add_column("total s", justify="right")
    table.add_column("share", justify="right")
    for phase, figures in state.timer.breakdown(state.run.phases).items():
        label = ("  " + phase.split(".", 1)[1]) if "." in phase else phase
        table.add_row(label, f"{figures['mean_ms']:.2f}", f"{figures['total_s']:.2f}", f"{100 * figures['share']:.1f}%")
    if state.timer.compiled:
        # Kept out of the phases above: what compiling cost once, not what each iteration costs.
        table.add_row("first compile", "", f"{state.timer.compile_seconds:.2f}", "", style="dim")
    return table


def summary_table(state: TrainState) -> Table:
    """Frames, wall time, fps, returns and when the stop condition was reached."""
    table = Table(title=f"run {state.status}", show_header=False, title_justify="left")
    table.add_column("what")
    table.add_column("value", justify="right")
    unit = state.run.source.unit
    table.add_row(unit, f"{state.frames:,}")
    table.add_row("iterations", f"{state.iteration:,}")
    table.add_row("wall time", f"{state.wall_time:.2f} s")
    table.add_row(f"mean {unit}/s", f"{state.fps:,.0f}")
    window = _return_label(state)
    table.add_row(f"best return ({window})", _fmt_return(state.best_return))
    table.add_row(f"last return ({window})", _fmt_return(state.last_return))
    target = state.run.cfg.run.stop_at_return
    if target is not None:
        reached = f"{state.solved_at[0]:,} {unit}, {state.solved_at[1]:.2f} s" if state.solved_at else "not reached"
        table.add_row(f"return >= {target:g}", reached)
    if state.last_eval:
        cfg = state.run.cfg.eval
        table.add_row(
            f"eval return ({cfg.episodes} episodes at {state.eval_frames:,} {unit})",
            f"{state.last_eval['eval/return_mean']:.1f} ± {state.last_eval['eval/return_std']:.1f}",
        )
    final = state.final_eval
    if final is not None:
        how = "deterministic" if final.get("deterministic") else "sampled"
        table.add_row(
            f"final eval ({final['episodes']} episodes, {how})" if "mean" in final else "final eval",
            f"{final['mean']:.1f} ± {final['std']:.1f}" if "mean" in final else escape(final["error"]),
        )
    if state.checkpoint_path is not None:
        table.add_row("checkpoint", escape(str(state.checkpoint_path.relative_to(state.run_dir))))
    if state.error:
        table.add_row("error", escape(state.error))
    return table


class ConsoleReport:
    """Hooks that render a run on ``console``; ``quiet`` keeps only the summary.

    On a terminal a progress bar over frames shows frames/s and ETA, with the
    timing tables printed above it. Elsewhere (a log file) the output is plain
    text with no cursor movement.
    """

    def __init__(self, console: Console, *, quiet: bool = False):
        self.console = console
        self.quiet = quiet
        self.progress: Progress | None = None
        # Set with progress: its bar's task.
        self.task: TaskID | None = None
        self.last_table = time.perf_counter()

    def hooks(self) -> Hooks:
        return Hooks(
            on_run_start=[self.start],
            on_iteration_end=[self.iteration],
            on_final_eval_episode=[self.final_eval],
            on_run_end=[self.end],
        )

    def start(self, state: TrainState) -> None:
        cfg = state.run.cfg
        self.last_table = time.perf_counter()
        self.console.print(f"run folder: {escape(str(state.run_dir))}")
        if self.quiet:
            return
        world = state.run.group.world_size
        frames = (
            steps_planned(cfg.data)
            if cfg.offline
            else frames_planned(cfg.collector)
            if world == 1
            else f"{state.run.planned_progress:,} frames on {world} ranks ({cfg.run.parallel}: "
            f"{state.run.planned_progress // (world * state.run.iterations):,} per rank and iteration)"
        )
        self.console.print(
            f"{cfg.algo.name} on {cfg.env.id} x{cfg.env.num_envs} "
            f"({'envpool' if cfg.env.backend == 'envpool' else cfg.env.vectorization}), "
            f"device {state.run.device}, {frames}, seed {cfg.run.seed}"
        )
        self.console.print(f"{state.run.threads.describe()}, precision {cfg.run.precision}")
        if self.console.is_terminal:
            self.progress = Progress(
                TextColumn("[bold]training"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(f"{state.run.source.unit} · {{task.fields[fps]}}/s · return {{task.fields[ret]}}"),
                TimeRemainingColumn(),
                console=self.console,
            )
            self.task = self.progress.add_task("train", total=state.run.planned_progress, fps="-", ret="-")
            self.progress.start()

    def iteration(self, state: TrainState) -> None:
        if self.quiet:
            return
        if self.progress is not None:
            assert self.task is not None
            self.progress.update(
                self.task, completed=state.frames, fps=f"{state.fps:,.0f}", ret=_fmt_return(state.last_return)
            )
        if not self._due(state):
            return
        if state.run.cfg.timing.enabled:
            self.console.print(timing_table(state))
        elif self.progress is None:
            unit = state.run.source.unit
            self.console.print(
                f"iteration {state.iteration}: {unit} {state.frames:,}, "
                f"{state.fps:,.0f} {unit}/s, return {_fmt_return(state.last_return)}"
            )

    def _due(self, state: TrainState) -> bool:
        """Whether a table is due: every ``timing.every`` iterations when set, else once
        ``timing.seconds`` of wall time have passed since the last one, so that a fast run
        prints a handful of tables rather than one per iteration."""
        timing = state.run.cfg.timing
        if timing.every is not None:
            return state.iteration % timing.every == 0
        now = time.perf_counter()
        if now - self.last_table < timing.seconds:
            return False
        self.last_table = now
        return True

    def final_eval(self, state: TrainState, done: int, total: int) -> None:
        """The final evaluation's episodes: on a terminal a bar of its own below the finished training bar;
        elsewhere a line at its start and end, and at most one every ``timing.seconds`` between."""
        if self.quiet:
            return
        if self.progress is not None:
            if done == 0:
                self.progress.stop()
                self.progress = Progress(
                    TextColumn("[bold]final evaluation"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("episodes"),
                    TimeRemainingColumn(),
                    console=self.console,
                )
                self.task = self.progress.add_task("eval", total=total)
                self.progress.start()
            assert self.task is not None
            self.progress.update(self.task, completed=done)
            return
        now = time.perf_counter()
        if done in (0, total) or now - self.last_table >= state.run.cfg.timing.seconds:
            self.last_table = now
            self.console.print(f"final evaluation: {done:,} of {total:,} episodes")

    def end(self, state: TrainState) -> None:
        if self.progress is not None:
            self.progress.stop()
        if state.timer.iterations:
            self.console.print(run_timing_table(state))
        self.console.print(summary_table(state))
        self.console.print(f"run folder: {escape(str(state.run_dir))}")
