"""Learning curves of run folders: read ``metrics.csv``, group the seeds of one experiment,
draw each group's median with a band and the time per iteration of each (``rlcli plot``).

Reading and grouping need numpy only; drawing imports matplotlib (the ``plot`` extra).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rlcli.config.errors import InputError, check_output_file
from rlcli.config.load import read_toml

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
class RunData:
    """One run folder: who it is (from ``config.toml``), its metrics and its timing."""

    path: Path
    name: str
    """``run.name`` less the ``-seed<N>`` suffix that ``rlcli train --seeds`` adds."""
    algo: str
    env: str
    seed: int | None
    return_window: int | None
    columns: tuple[str, ...]
    """The csv header, in its order."""
    values: dict[str, np.ndarray] = field(repr=False)
    """Each column as float64, one entry per row that parsed; NaN where a cell was empty."""
    timing: dict[str, float] = field(default_factory=dict)
    """Mean ms per iteration of each phase, from ``run.json`` (empty when it has none)."""
    seeds_group: Path | None = None
    """The ``--seeds`` group folder that holds this run, if any."""

    def series(self, x: str, y: str) -> tuple[np.ndarray, np.ndarray]:
        """The rows where both ``x`` and ``y`` have a value, sorted by ``x``: two [K] float64 arrays."""
        xs, ys = self.values[x], self.values[y]
        keep = np.isfinite(xs) & np.isfinite(ys)
        order = np.argsort(xs[keep], kind="stable")
        return xs[keep][order], ys[keep][order]


@dataclass(frozen=True)
class Group:
    """Runs of one experiment: the same run name, algorithm and env (and ``--seeds`` folder)."""

    label: str
    """``<name> (<algo> on <env>)``, then ``, median of N seeds`` or ``, seed N``."""
    short: str
    """The name and the number of seeds, for the timing panel."""
    runs: tuple[RunData, ...]


@dataclass(frozen=True)
class Curve:
    """A group's line on a common x grid; ``low``, ``high`` and ``runs`` are None for one run."""

    x: np.ndarray
    median: np.ndarray
    low: np.ndarray | None = None
    high: np.ndarray | None = None
    runs: np.ndarray | None = None
    """How many runs each point is over."""


@dataclass(frozen=True)
class PlotResult:
    """What ``plot_runs`` drew and where."""

    output: Path
    groups: list[Group]
    skipped: list[tuple[Path, str]]
    """Runs left out, each with why (no value of the column yet)."""


def expand_run_dirs(paths: Sequence[Path]) -> list[Path]:
    """The run folders named by ``paths``, in order and without repeats.

    A path is a run folder (it holds ``metrics.csv``) or a folder of them (an output
    folder, a ``--seeds`` group folder): its subfolders that are run folders, sorted by
    name. Inside it, a ``--seeds`` group folder (one with ``seeds.json``) is opened one
    level further, so that an output folder brings the seeds trained into it too.

    Raises:
        InputError: a path that does not exist, is not a folder, or holds no run folder.
    """
    found: list[Path] = []
    for path in map(Path, paths):
        what = f"RUN_DIR {path}"
        if not path.exists():
            raise InputError(what, "does not exist")
        if not path.is_dir():
            raise InputError(what, "is not a folder; give a run folder (it holds metrics.csv) or a folder of them")
        if (path / "metrics.csv").is_file():
            found.append(path)
            continue
        runs = []
        for child in sorted(p for p in path.iterdir() if p.is_dir()):
            if (child / "metrics.csv").is_file():
                runs.append(child)
            elif (child / "seeds.json").is_file():
                runs.extend(sorted(p for p in child.iterdir() if (p / "metrics.csv").is_file()))
        if not runs:
            raise InputError(what, "holds no metrics.csv, nor do the folders in it; give a run folder "
                                   "or a folder of them")
        found.extend(runs)
    return list({p.resolve(): p for p in found}.values())


def read_metrics(path: Path) -> tuple[tuple[str, ...], dict[str, np.ndarray]]:
    """The header and the columns of a ``metrics.csv``, as float64 arrays.

    An empty cell or ``nan`` is NaN (no value yet). A row that does not parse (the
    last line of a run that was killed while writing it) is left out.

    Raises:
        InputError: the file cannot be read or has no header.
    """
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            lines = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(str(path), f"cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    if not lines or not lines[0]:
        raise InputError(str(path), "is empty; it has no header row")
    header = tuple(lines[0])
    rows = []
    for line in lines[1:]:
        if len(line) != len(header):
            continue
        try:
            rows.append([float(cell) if cell.strip() else math.nan for cell in line])
        except ValueError:
            continue
    table = np.array(rows, dtype=np.float64).reshape(len(rows), len(header))
    return header, {name: table[:, i] for i, name in enumerate(header)}


def read_run(path: Path) -> RunData:
    """The run folder at ``path``: ``config.toml``, ``metrics.csv`` and, if readable, ``run.json``.

    Raises:
        InputError: no ``config.toml`` or an unreadable ``metrics.csv``.
        ConfigError: ``config.toml`` is not valid TOML.
    """
    if not (path / "config.toml").is_file():
        raise InputError(f"RUN_DIR {path}", "has metrics.csv but no config.toml; is it an rlcli run folder?")
    config = read_toml(path / "config.toml")
    run, algo, env = (config.get(k) if isinstance(config.get(k), dict) else {} for k in ("run", "algo", "env"))
    seed = run.get("seed") if isinstance(run.get("seed"), int) else None
    name = str(run.get("name", path.name))
    if seed is not None:
        # `rlcli train --seeds` names each seed's run `<name>-seed<N>`: one experiment, one name.
        name = re.sub(rf"-seed{seed}$", "", name)
    window = run.get("return_window")
    columns, values = read_metrics(path / "metrics.csv")
    return RunData(
        path=path, name=name, algo=str(algo.get("name", "?")), env=str(env.get("id", "?")), seed=seed,
        return_window=window if isinstance(window, int) else None, columns=columns, values=values,
        timing=_read_timing(path / "run.json"),
        seeds_group=path.parent if (path.parent / "seeds.json").is_file() else None,
    )


def _read_timing(path: Path) -> dict[str, float]:
    """Mean ms of each phase in ``run.json``'s ``timing``; empty when the file or the key is missing."""
    try:
        timing = json.loads(path.read_text(encoding="utf-8")).get("timing") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    if not isinstance(timing, dict):
        return {}
    return {phase: float(entry["mean_ms"]) for phase, entry in timing.items()
            if isinstance(entry, dict) and isinstance(entry.get("mean_ms"), (int, float))}


def group_runs(runs: Sequence[RunData]) -> list[Group]:
    """Runs grouped into experiments, in order of first appearance.

    Runs are one experiment when they share the run name (less ``-seed<N>``), ``algo.name``
    and ``env.id``, and the ``--seeds`` group folder they sit in (or none): the seeds of one
    ``--seeds`` call are never mixed with a run trained on its own. Labels that would
    still be equal get the folder's name.
    """
    keyed: dict[tuple[Any, ...], list[RunData]] = {}
    for run in runs:
        keyed.setdefault((run.name, run.algo, run.env, run.seeds_group), []).append(run)
    groups = []
    for members in keyed.values():
        first = members[0]
        label = f"{first.name} ({first.algo} on {first.env})"
        seeds = {r.seed for r in members}
        if len(members) == 1:
            tail = "" if first.seed is None else f"seed {first.seed}"
            label, short = label + (f", {tail}" if tail else ""), f"{_clip(first.name)}\n{tail}".strip()
        else:
            count = f"{len(members)} seeds" if len(seeds) == len(members) else f"{len(members)} runs"
            label, short = f"{label}, median of {count}", f"{_clip(first.name)}\n{count}"
        groups.append(Group(label, short, tuple(members)))
    labels = [g.label for g in groups]
    return [Group(f"{g.label} [{(g.runs[0].seeds_group or g.runs[0].path).name}]", g.short, g.runs)
            if labels.count(g.label) > 1 else g for g in groups]


def _clip(name: str, width: int = 22) -> str:
    """``name``, cut to ``width`` characters with an ellipsis, for the timing panel's axis."""
    return name if len(name) <= width else name[: width - 1] + "\N{HORIZONTAL ELLIPSIS}"


def figure_size(groups: Sequence[Group]) -> tuple[float, float]:
    """Width and height in inches: 12 x 5, taller by a row's height for each legend row
    past three (a row per group, one for the band's title), so that the legend below the
    curves never squeezes them."""
    rows = len(groups) + any(len(g.runs) > 1 for g in groups)
    return FIGSIZE_IN[0], FIGSIZE_IN[1] + LEGEND_ROW_IN * max(0, rows - 3)


def group_curve(group: Group, x: str, y: str, band: Literal["minmax", "iqr"] = "minmax") -> Curve:
    """The line of ``group``: its one run as logged, or the median of its runs with a band.

    For several runs the common grid is the union of the runs' x values. Each run is
    linearly interpolated onto the grid inside its own range and never extrapolated past
    its first or last value; the median and band at a point are over the runs that cover
    it. Runs of one preset log at the same frames, so on the frames axis nothing is
    interpolated and every point is over all the runs unless one stopped early (killed,
    or solved); on the time axis the end of the curve is over the slower runs only.

    Args:
        x, y: column names in every run.
        band: ``minmax`` (min to max over the runs) or ``iqr`` (25th to 75th percentile,
            numpy's linear interpolation).
    """
    series = [run.series(x, y) for run in group.runs]
    if len(series) == 1:
        return Curve(*series[0])
    grid = np.unique(np.concatenate([xs for xs, _ in series]))
    # Every grid point is some run's own x, so no column is all NaN.
    stack = np.full((len(series), len(grid)), np.nan)
    for row, (xs, ys) in zip(stack, series):
        inside = (grid >= xs[0]) & (grid <= xs[-1])
        row[inside] = np.interp(grid[inside], xs, ys)
    if band == "iqr":
        low, high = np.nanpercentile(stack, [25, 75], axis=0)
    else:
        low, high = np.nanmin(stack, axis=0), np.nanmax(stack, axis=0)
    return Curve(grid, np.nanmedian(stack, axis=0), low, high, np.isfinite(stack).sum(axis=0))


def mean_phase_ms(group: Group) -> dict[str, float]:
    """Mean ms per iteration of each top-level phase, averaged over the runs that have timing.

    Top-level phases have no dot in their name; ``iteration`` (the whole) is left out and
    what it holds beyond them is ``other`` when positive. A phase missing in a run counts 0.
    """
    timed = [run.timing for run in group.runs if run.timing]
    phases = list(dict.fromkeys(p for t in timed for p in t if "." not in p and p != "iteration"))
    means = {p: sum(t.get(p, 0.0) for t in timed) / len(timed) for p in phases} if timed else {}
    if timed and all("iteration" in t for t in timed):
        other = sum(t["iteration"] - sum(t.get(p, 0.0) for p in phases) for t in timed) / len(timed)
        if other > 0:
            means["other"] = other
    return means


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
        raise InputError(f"--y {y}", "no run has a value of it yet: " + "; ".join(
            f"{path}: {why}" for path, why in skipped))
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
        handles, partial = [], False
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
        curve_ax.legend(handles, [g.label for g in groups], handler_map={tuple: HandlerTuple(ndivide=1)},
                        title=(f"shaded: {BANDS[band]} over seeds" + ("; dashed: not every seed" if partial else "")
                               if grouped else None),
                        # Below the axes, so that it never hides a curve.
                        loc="upper center", bbox_to_anchor=(0.5, -0.13), frameon=False)
        curve_ax.set_xlabel(X_LABELS[x])
        curve_ax.set_ylabel(y_label(y, [r for g in groups for r in g.runs]))
        curve_ax.set_title(f"Learning curves ({y})")
        curve_ax.grid(True, alpha=0.3)
        if x == "frames":
            curve_ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        curve_ax.set_xlim(left=0)
        _draw_timing(time_ax, groups)
        # Written whole or not at all: a temporary file beside it, then renamed.
        temporary = output.with_name(f".{output.name}.tmp")
        try:
            fig.savefig(temporary, dpi=DPI, format="png")
            os.replace(temporary, output)
        finally:
            temporary.unlink(missing_ok=True)


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
        ax.barh(rows, widths, left=left, height=0.6, label=phase,
                color="lightgrey" if phase == "other" else palette(index % 8), edgecolor="white")
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
