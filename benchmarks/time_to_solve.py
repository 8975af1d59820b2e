"""Frames and seconds until a preset reaches its return threshold, over several seeds.

Runs the real ``rlcli train`` command once per seed with ``--quiet`` and reads
each run's ``run.json``. Training time is counted from the start of training
(``solved_at_seconds``); process time from the start of the ``rlcli`` process.

    python benchmarks/time_to_solve.py --preset ppo_cartpole --seeds 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table


def rlcli_command() -> list[str]:
    script = Path(sys.executable).with_name("rlcli")
    return [str(script)] if script.exists() else [shutil.which("rlcli") or "rlcli"]


def run_seed(preset: str, seed: int, threshold: float | None, extra: list[str], out: Path) -> dict:
    command = [*rlcli_command(), "train", preset, "--seed", str(seed), "--quiet", "--out", str(out / str(seed))]
    if threshold is not None:
        command += ["--set", f"run.stop_at_return={threshold}"]
    for item in extra:
        command += ["--set", item]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    process_s = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"seed {seed}: rlcli exited {done.returncode}\n{done.stderr[-2000:]}")
    (run_dir,) = (out / str(seed)).iterdir()
    status = json.loads((run_dir / "run.json").read_text())
    status["process_s"] = process_s
    return status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", required=True, help="preset name or file")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..K-1")
    parser.add_argument("--threshold", type=float, default=None,
                        help="return to reach (default: the preset's run.stop_at_return)")
    parser.add_argument("--set", dest="extra", action="append", default=[], help="extra KEY=VALUE override")
    args = parser.parse_args()

    console = Console()
    table = Table(title=f"time to solve: {args.preset}")
    for column in ("seed", "solved", "frames", "train s", "process s", "fps", "best return"):
        table.add_column(column, justify="right")
    solved = []
    with tempfile.TemporaryDirectory(prefix="rlcli-tts-") as tmp:
        for seed in range(args.seeds):
            status = run_seed(args.preset, seed, args.threshold, args.extra, Path(tmp))
            hit = status["solved_at_frames"] is not None
            best = status["best_return"]
            if hit:
                solved.append(status)
            table.add_row(
                str(seed), "yes" if hit else "no",
                f"{status['solved_at_frames'] or status['frames']:,}",
                f"{status['solved_at_seconds'] or status['wall_time_s']:.2f}",
                f"{status['process_s']:.2f}", f"{status['fps']:,.0f}",
                "-" if best is None else f"{best:.1f}",
            )
    console.print(table)
    console.print(f"solved on {len(solved)} of {args.seeds} seeds")
    if solved:
        console.print(
            f"median over solved seeds: {statistics.median(s['solved_at_frames'] for s in solved):,.0f} frames, "
            f"{statistics.median(s['solved_at_seconds'] for s in solved):.2f} s training, "
            f"{statistics.median(s['process_s'] for s in solved):.2f} s from process start"
        )


if __name__ == "__main__":
    main()
