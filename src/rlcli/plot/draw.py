"""Drawing for ``rlcli plot``: each group's median with a band beside the time per iteration
of each, as a PNG. Matplotlib (the ``plot`` extra) is imported only to draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rlcli.config.errors import InputError, check_output_file
from rlcli.files import write_atomic
from rlcli.plot.runs import (
    Curve,
    Group,
    RunData,
    expand_run_dirs,
    group_curve,
    group_runs,
    mean_phase_ms,
    read_run,
)

RETURN = "rollout/episode_return_mean"
X_COLUMNS = {"frames": "frames", "time": "wall_time_s"}
X_LABELS = {"frames": "frames", "time": "wall-clock time (s)"}
BANDS = {"minmax": "min to max", "iqr": "25th to 75th percentile"}
INSTALL_HINT = "pip install 'rlcli[plot]' (pip install -e '.[plot]' in a clone)"
# 1200 x 500 pixels (taller with a long legend): readable at 100 % zoom with 11-point text.
FIGSIZE_IN = (12.0, 5.0)
LEGEND_ROW_IN = 0.25
DPI = 100
FONT_SIZE = 11


@dataclass(frozen=True)
class PlotResult:
    """What ``plot_runs`` drew and where."""

    output: Path
    groups: list[Group]
    skipped: list[tuple[Path, str]]
    """Runs left out, each with why (no value of the column yet)."""


def figure_size(groups: Sequence[Group]) -> tuple[float, float]:
    """Width and height in inches: 12 x 5, taller by a row's height for each legend row
    past three (a row per group, one for the band's title), so that the legend below the
    curves never squeezes them."""
    rows = len(groups) + any(len(g.runs) > 1 for g in groups)
    return FIGSIZE_IN[0], FIGSIZE_IN[1] + LEGEND_ROW_IN * max(0, rows - 3)


def y_label(y: str, runs: Sequence[RunData]) -> str:
    """The y axis label: the column's meaning where known, else its name."""
    windows = {r.return_window for r in runs}
    window = f"last {windows.pop()}" if len(windows) == 1 and None not in windows else "recent"
    known = {
        RETURN: f"episode return (mean of {window} episodes)",
        "rollout/episode_length_mean": f"episode length in steps (mean of {window} episodes)",
        "fps": "frames per second",
        "wall_time_s": "wall-clock time (s)",
    }
    return known.get(y, y)


def check_matplotlib() -> None:
    """Raise an InputError saying what to install when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise InputError("rlcli plot needs matplotlib", INSTALL_HINT) from None


def plot_runs(
    run_dirs: Sequence[Path],
    *,
    output: Path,
    x: Literal["frames", "time"] = "frames",
    y: str = RETURN,
    band: Literal["minmax", "iqr"] = "minmax",
) -> PlotResult:
    """Write a PNG of learning curves (one line per group) beside the time per iteration of each.

    ``run_dirs`` are run folders or folders of them (see :func:`expand_run_dirs`); runs
    are grouped by :func:`group_runs` and each group drawn by :func:`group_curve`. Runs
    without a value of ``y`` yet are left out and listed in ``PlotResult.skipped``.

    Raises:
        InputError: matplotlib is missing; a bad ``x``, ``band`` or output path; a folder
            that is not a run; ``y`` in no run (the error lists the columns there are).
        ConfigError: a run's ``config.toml`` is not valid TOML.
    """
    check_matplotlib()
    if x not in X_COLUMNS:
        raise InputError(f"--x {x}", f"allowed: {', '.join(X_COLUMNS)}")
    if band not in BANDS:
        raise InputError(f"--band {band}", f"allowed: {', '.join(BANDS)}")
    output = Path(output)
    check_output_file(output, flag="-o", suffix=".png")
    runs = [read_run(p) for p in expand_run_dirs(run_dirs)]
    x_column = X_COLUMNS[x]
    available = list(dict.fromkeys(c for r in runs for c in r.columns))
    if y not in available:
        raise InputError(f"--y {y}", f"no run has this column; available: {', '.join(available)}")
    kept, skipped = [], []
    for run in runs:
        if x_column not in run.columns or y not in run.columns:
            skipped.append((run.path, f"no {x_column if y in run.columns else y} column"))
        elif not len(run.series(x_column, y)[0]):
            skipped.append((run.path, f"no value of {y} yet"))
        else:
            kept.append(run)
    if not kept:
        raise InputError(
            f"--y {y}", "no run has a value of it yet: " + "; ".join(f"{path}: {why}" for path, why in skipped)
        )
    groups = group_runs(kept)
    curves = [group_curve(g, x_column, y, band) for g in groups]
    _draw(groups, curves, output, x=x, y=y, band=band)
    return PlotResult(output, groups, skipped)


def _draw(groups: list[Group], curves: list[Curve], output: Path, *, x: str, y: str, band: str) -> None:
    """Both panels into ``output``, with a Figure of its own (no pyplot state)."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.legend_handler import HandlerTuple
    from matplotlib.ticker import EngFormatter

    with matplotlib.rc_context({"font.size": FONT_SIZE, "axes.titlesize": FONT_SIZE + 1}):
        fig = Figure(figsize=figure_size(groups), dpi=DPI, layout="constrained")
        curve_ax, time_ax = fig.subplots(1, 2, width_ratios=[3, 2])
        handles: list[tuple[Any, ...]] = []
        partial = False
        for index, (group, curve) in enumerate(zip(groups, curves)):
            colour = f"C{index % 10}"
            median = curve.median
            if curve.runs is not None and (curve.runs < len(group.runs)).any():
                # Dashed where some runs have no value (stopped early, or slower on the time axis).
                partial = True
                curve_ax.plot(curve.x, median, color=colour, linewidth=1.5, linestyle="--")
                median = np.where(curve.runs == len(group.runs), median, np.nan)
            (line,) = curve_ax.plot(curve.x, median, color=colour, linewidth=2)
            if curve.low is not None:
                shade = curve_ax.fill_between(curve.x, curve.low, curve.high, color=colour, alpha=0.2, linewidth=0)
                handles.append((line, shade))
            else:
                handles.append((line,))
        grouped = any(len(g.runs) > 1 for g in groups)
        curve_ax.legend(
            handles,
            [g.label for g in groups],
            handler_map={tuple: HandlerTuple(ndivide=1)},
            title=(
                f"shaded: {BANDS[band]} over seeds" + ("; dashed: not every seed" if partial else "")
                if grouped
                else None
            ),
            # Below the axes, so that it never hides a curve.
            loc="upper center",
            bbox_to_anchor=(0.5, -0.13),
            frameon=False,
        )
        curve_ax.set_xlabel(X_LABELS[x])
        curve_ax.set_ylabel(y_label(y, [r for g in groups for r in g.runs]))
        curve_ax.set_title(f"Learning curves ({y})")
        curve_ax.grid(True, alpha=0.3)
        if x == "frames":
            curve_ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        curve_ax.set_xlim(left=0)
        _draw_timing(time_ax, groups)
        write_atomic(output, lambda file: fig.savefig(file, dpi=DPI, format="png"))


def _draw_timing(ax: Any, groups: list[Group]) -> None:
    """One horizontal stacked bar per group: mean ms per iteration of each top-level phase."""
    means = [mean_phase_ms(g) for g in groups]
    phases = list(dict.fromkeys(p for m in means for p in m if p != "other"))
    phases += ["other"] if any("other" in m for m in means) else []
    ax.set_title("Time per iteration (run.json timing)")
    if not phases:
        ax.text(0.5, 0.5, "no timing in run.json", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    import matplotlib

    palette = matplotlib.colormaps["Set2"]
    rows = np.arange(len(groups))
    left = np.zeros(len(groups))
    for index, phase in enumerate(phases):
        widths = np.array([m.get(phase, 0.0) for m in means])
        ax.barh(
            rows,
            widths,
            left=left,
            height=0.6,
            label=phase,
            color="lightgrey" if phase == "other" else palette(index % 8),
            edgecolor="white",
        )
        left += widths
    for row, total in zip(rows, left):
        if total > 0:
            ax.text(total, row, f" {total:.1f}", va="center")
    ax.set_yticks(rows, [g.short for g in groups])
    for index, tick in enumerate(ax.get_yticklabels()):
        tick.set_color(f"C{index % 10}")
    ax.invert_yaxis()
    ax.set_xlabel("mean ms per iteration")
    ax.set_xlim(0, max(left.max(), 1e-9) * 1.2)
    # Below the axis, so that it never hides a bar.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncols=2, frameon=False)
    ax.grid(True, axis="x", alpha=0.3)
