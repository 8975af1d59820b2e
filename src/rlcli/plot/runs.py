"""Run folders for ``rlcli plot``: read each one's ``config.toml``, ``metrics.csv`` and
``run.json`` timing, group the seeds of one experiment, and put each group on one curve
(the median and a band over its seeds). Numpy only; drawing is in :mod:`rlcli.plot.draw`.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rlcli.config.errors import InputError
from rlcli.config.load import read_toml


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
            raise InputError(
                what, "holds no metrics.csv, nor do the folders in it; give a run folder or a folder of them"
            )
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
    run, algo, env = (_table(config, k) for k in ("run", "algo", "env"))
    seed = run.get("seed") if isinstance(run.get("seed"), int) else None
    name = str(run.get("name", path.name))
    if seed is not None:
        # `rlcli train --seeds` names each seed's run `<name>-seed<N>`: one experiment, one name.
        name = re.sub(rf"-seed{seed}$", "", name)
    window = run.get("return_window")
    columns, values = read_metrics(path / "metrics.csv")
    return RunData(
        path=path,
        name=name,
        algo=str(algo.get("name", "?")),
        env=str(env.get("id", "?")),
        seed=seed,
        return_window=window if isinstance(window, int) else None,
        columns=columns,
        values=values,
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
    return {
        phase: float(entry["mean_ms"])
        for phase, entry in timing.items()
        if isinstance(entry, dict) and isinstance(entry.get("mean_ms"), (int, float))
    }


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
    return [
        Group(f"{g.label} [{(g.runs[0].seeds_group or g.runs[0].path).name}]", g.short, g.runs)
        if labels.count(g.label) > 1
        else g
        for g in groups
    ]


def _clip(name: str, width: int = 22) -> str:
    """``name``, cut to ``width`` characters with an ellipsis, for the timing panel's axis."""
    return name if len(name) <= width else name[: width - 1] + "\N{HORIZONTAL ELLIPSIS}"


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


def _table(config: dict[str, Any], key: str) -> dict[str, Any]:
    """``config``'s table ``key``, or an empty one where it has none (or a value that is not a table)."""
    value = config.get(key)
    return value if isinstance(value, dict) else {}
