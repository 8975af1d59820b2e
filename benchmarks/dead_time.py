"""Where a first answer's seconds go: ``rlcli train PRESET`` timed step by step, from process start to exit.

Each run is a real ``rlcli train`` process (``--quiet``, a fresh run folder) started through a probe that
wraps the steps in place and writes, for each, the seconds since the process started (read from /proc,
so the interpreter's own start counts):

- before the first iteration: the imports (``torch``; ``tensordict``, which imports ``torch._dynamo``;
  the rest of rlcli's), reading the config, ``build_run``, opening the run folder;
- the training (the loop's iterations, from the first one's start to the last one's end);
- after the last iteration: the last rows and checkpoint, ``final.pt``, the final evaluation, ``run.json``,
  closing the envs, the summary, and the interpreter's exit (measured from outside: the process's wall
  time minus the probe's last mark).

It prints each step's median over ``--repeat`` runs and the issue's bars: process time minus training
time (``ppo_cartpole``: at most 2.8 s, ``sac_pendulum``: 3.0 s) and the final evaluation's share of the
process (at most 10 %).

    python benchmarks/dead_time.py [PRESET ...] [--repeat 3] [--src OTHER_CHECKOUT/src] [--set KEY=VALUE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from startup import SINCE_START

ROOT = Path(__file__).resolve().parents[1]
BARS = {"ppo_cartpole": 2.8, "sac_pendulum": 3.0}

PROBE = (
    SINCE_START
    + r"""
import json, os, sys, time
src, marks_file, *argv = sys.argv[1:]
if src:
    sys.path.insert(0, src)
# /proc's start is in clock ticks; perf_counter gives the rest of the resolution.
marks = [("interpreter", since_start())]
base = time.perf_counter() - marks[0][1]
def mark(name):
    marks.append((name, time.perf_counter() - base))
def wrap(module, name, label):
    inner = getattr(module, name)
    def wrapped(*args, **kwargs):
        mark(label + " (start)")
        try:
            return inner(*args, **kwargs)
        finally:
            mark(label)
    setattr(module, name, wrapped)
import torch; mark("import torch")
import tensordict; mark("import tensordict (torch._dynamo)")
import gymnasium; mark("import gymnasium")
from rlcli.cli.app import app; mark("import rlcli's CLI")
import rlcli.config.load, rlcli.run, rlcli.trainer.loop as loop, rlcli.trainer.saving as saving
import rlcli.trainer.schedule as schedule, rlcli.cli.train as cli_train
mark("import rlcli's trainer")
wrap(rlcli.config.load, "load_config", "read the config")
wrap(rlcli.run, "build_run", "build_run")
wrap(loop, "_start", "open the run folder")
first = loop._iteration
def iteration(*args, **kwargs):
    if not any(name == "first iteration (start)" for name, _ in marks):
        mark("first iteration (start)")
    result = first(*args, **kwargs)
    marks.append(("training", time.perf_counter() - base))
    return result
loop._iteration = iteration
wrap(saving, "save_checkpoint", "last checkpoint")
wrap(saving, "save_final", "final.pt")
wrap(loop, "final_evaluation", "final evaluation")
wrap(saving, "write_status", "run.json")
wrap(loop, "_finish", "folder complete")
import atexit
import rlcli.cli as cli
def write():
    mark("exit handlers")
    with open(marks_file, "w") as handle:
        json.dump(marks, handle)
leave = getattr(cli, "_leave", None)
if leave is None:
    # An rlcli that lets the interpreter tear itself down: the marks are written by the first exit
    # handler to run (the last registered), and the teardown shows as the interpreter's exit.
    atexit.register(write)
else:
    def leave_after_writing(status):
        write()
        leave(status)
    cli._leave = leave_after_writing
sys.argv = ["rlcli", *argv]
cli.main()
"""
)


def one_run(preset: str, src: str, sets: list[str]) -> dict[str, float]:
    """The seconds of each step of one ``rlcli train`` process."""
    with tempfile.TemporaryDirectory(prefix="rlcli-dead-time-") as scratch:
        marks_file = Path(scratch) / "marks.json"
        command = [sys.executable, "-c", PROBE, src, str(marks_file), "train", preset, "--quiet"]
        command += ["--out", str(Path(scratch) / "runs"), *[arg for item in sets for arg in ("--set", item)]]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        process = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{preset} exited {done.returncode}: {done.stderr[-2000:]}")
        marks = json.loads(marks_file.read_text())
        (run_json,) = Path(scratch, "runs").glob("*/run.json")
        info = json.loads(run_json.read_text())
    # The interpreter started before our first wall reading: the process's time is its own.
    process += marks[0][1]
    return steps(marks, process, info)


def steps(marks: list[tuple[str, float]], process: float, info: dict) -> dict[str, float]:
    """The seconds of each span between two marks, in order, named after the mark that ends it ("X (start)":
    what ran before step X began), then the totals."""
    out: dict[str, float] = {}
    training = [t for name, t in marks if name == "training"]
    first = next(t for name, t in marks if name == "first iteration (start)")
    previous = 0.0
    for name, t in marks:
        if name == "training":
            continue
        if name == "first iteration (start)":
            out["before the first iteration: the rest"] = t - previous
            previous = training[-1]
            continue
        label = name if name not in out else f"{name} #2"
        out[label] = t - previous
        previous = t
    out["interpreter exit"] = process - marks[-1][1]
    out["= start-up (process start to first iteration)"] = first
    out["= training (first iteration to last)"] = training[-1] - first
    out["= after the last iteration"] = process - training[-1]
    out["= process"] = process
    out["final evaluation"] = (info.get("final_eval") or {}).get("seconds", 0.0)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", default=["ppo_cartpole", "sac_pendulum"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--src", default="", help="another checkout's src/ folder to measure instead")
    parser.add_argument("--set", action="append", default=[], dest="sets", metavar="KEY=VALUE")
    parser.add_argument("--json", type=Path, help="also write the medians here")
    args = parser.parse_args()
    if not Path("/proc/self/stat").exists():
        raise SystemExit("needs Linux /proc")
    report = {}
    for preset in args.presets:
        runs = [one_run(preset, args.src, args.sets) for _ in range(args.repeat)]
        median = {key: statistics.median(run.get(key, 0.0) for run in runs) for key in runs[0]}
        dead = statistics.median(run["= process"] - run["= training (first iteration to last)"] for run in runs)
        share = statistics.median(run["final evaluation"] / run["= process"] for run in runs)
        report[preset] = {"steps": median, "process_minus_training": dead, "final_eval_share": share}
        print(f"\n{preset} (median of {args.repeat}; src {args.src or 'installed'})")
        for key, value in median.items():
            print(f"  {key:40} {value:7.3f} s")
        bar = BARS.get(preset)
        print(
            f"  process - training: {dead:.2f} s"
            + (f" (bar {bar} s: {'met' if dead <= bar else 'MISSED'})" if bar else "")
        )
        print(f"  final evaluation: {share:.1%} of the process (bar 10 %: {'met' if share <= 0.10 else 'MISSED'})")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
