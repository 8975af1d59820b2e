"""A run folder read as the tests check it: found under ``--out``, its metrics with and without the
columns that measure time, its run.json and final checkpoint, and its files' sizes and times."""

from __future__ import annotations

import csv
import json
import re
import subprocess
from pathlib import Path

from support.cli import cli_env, command
from support.paths import ROOT

# Columns that measure the machine rather than the run: never part of a determinism check.
CLOCK_COLUMNS = ("wall_time_s", "fps")


def only_run_folder(out: Path, name: str | None = None) -> Path:
    """The single run folder under ``out``; with ``name``, checked to be ``<name>-<YYYYmmdd-HHMMSS>``."""
    entries = sorted(p for p in out.iterdir() if p.is_dir())
    assert len(entries) == 1, f"expected one run folder in {out}, found {[e.name for e in entries]}"
    folder = entries[0]
    if name is not None:
        assert re.fullmatch(rf"{re.escape(name)}-\d{{8}}-\d{{6}}(-\d+)?", folder.name), folder.name
    return folder


def no_run_folder(out: Path) -> None:
    assert not out.exists() or not any(out.iterdir()), f"bad input left {list(out.iterdir())}"


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a metrics.csv, checking every row has the header's column count."""
    with path.open(newline="", encoding="utf-8") as file:
        lines = list(csv.reader(file))
    if not lines:
        return [], []
    header, body = lines[0], lines[1:]
    for number, row in enumerate(body, start=2):
        assert len(row) == len(header), f"{path} line {number}: {len(row)} fields, header has {len(header)}"
    return header, [dict(zip(header, row)) for row in body]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def read_run_json(folder: Path) -> dict:
    return json.loads((folder / "run.json").read_text(encoding="utf-8"))


def load_final(folder: Path) -> dict:
    """final.pt as the design promises it loads: plain tensors and containers, weights_only."""
    import torch

    payload = torch.load(folder / "final.pt", map_location="cpu", weights_only=True)
    agent = payload["agent"]
    assert isinstance(agent, dict) and agent, "final.pt holds no agent state dict"
    for name, tensor in agent.items():
        assert isinstance(tensor, torch.Tensor), name
        if tensor.is_floating_point():
            assert torch.isfinite(tensor).all(), f"{name} is not finite"
    return payload


def assert_iterations(rows: list[dict], *, count: int, frames_per_batch: int) -> None:
    """Rows 1..count, one per iteration, each frames_per_batch frames after the last."""
    assert [int(r["iteration"]) for r in rows] == list(range(1, count + 1))
    assert [int(r["frames"]) for r in rows] == [frames_per_batch * i for i in range(1, count + 1)]


def timeless(column: str) -> bool:
    """Whether ``column`` is the same in any two runs of one seed (it measures no time)."""
    return column not in CLOCK_COLUMNS and not column.startswith("time/")


def rows_of(run_dir: Path) -> list[dict[str, str]]:
    """The metrics rows of a run folder without the columns that measure time: what a resumed run must
    write as an unbroken one did."""
    with (run_dir / "metrics.csv").open(newline="", encoding="utf-8") as handle:
        return [{k: v for k, v in row.items() if timeless(k)} for row in csv.DictReader(handle)]


def compared_metrics(folder: Path) -> tuple[list[str], list[list[str]]]:
    """A run's metrics.csv columns and rows without the clock columns: what two runs of one seed share."""
    header, rows = read_csv(folder / "metrics.csv")
    compared = [c for c in header if timeless(c)]
    return compared, [[row[c] for c in compared] for row in rows]


def metrics_by_process(tmp_path: Path, preset: str, seeds: dict[str, int], *args: str) -> dict[str, tuple]:
    """Train ``preset`` once per named seed, each in a process of its own, side by side, with
    ``args``; returns each run's (columns, rows) without the clock columns."""
    outs = {name: tmp_path / name for name in seeds}
    procs = {
        name: subprocess.Popen(
            command("train", preset, "--seed", str(seeds[name]), *args, "--quiet", "--out", out),
            cwd=ROOT,
            env=cli_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, out in outs.items()
    }
    metrics = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, f"{name}: exit {proc.returncode}\n{stdout}\n{stderr}"
        metrics[name] = compared_metrics(only_run_folder(outs[name], preset))
    return metrics


def snapshot(folder: Path, *, with_folders: bool = False) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time; ``with_folders`` adds every
    folder under it and ``folder`` itself (as "."), to show that nothing was created or removed either."""
    entries = {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if with_folders or p.is_file()
    }
    if with_folders:
        entries["."] = (0, folder.stat().st_mtime_ns)
    return entries
