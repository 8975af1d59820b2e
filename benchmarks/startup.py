"""Start-up times of the CLI, median of N fresh processes each.

- ``rlcli --version`` and ``rlcli validate presets/``: whole process wall time (bar: 0.5 s);
- ``rlcli train ppo_cartpole``: seconds from process start to the start of the first
  iteration (bar: 2.5 s), read from /proc when the loop's first iteration begins.

``--src DIR`` runs another checkout's ``src`` (``git worktree add /tmp/base COMMIT``), so that
before and after are measured by the same script in one session:

    python benchmarks/startup.py
    python benchmarks/startup.py --src /tmp/base/src
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BARS = {"rlcli --version": 0.5, "rlcli validate presets/": 0.5, "train: process start to first iteration": 2.5}

# The probes' clock (this script's and dead_time.py's): seconds since the process started, read from /proc
# as rlcli.timing.since_process_start reads them, without importing torch with that module.
SINCE_START = """
import os
def since_start():
    with open("/proc/self/stat") as handle:
        ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as handle:
        uptime = float(handle.read().split()[0])
    return uptime - ticks / os.sysconf("SC_CLK_TCK")
"""

# Runs the CLI's Typer app with argv; `--first-iteration` stops the process when the loop's
# first iteration begins and prints the seconds since the process started.
LAUNCH = (
    SINCE_START
    + """
import os, sys
src, mode, *argv = sys.argv[1:]
if src:
    sys.path.insert(0, src)
if mode == "first-iteration":
    import rlcli.trainer.loop as trainer
    def first(*args, **kwargs):
        sys.stderr.write(f"FIRST_ITERATION {since_start():.3f}\\n")
        sys.stderr.flush()
        os._exit(0)
    trainer._iteration = first
sys.argv = ["rlcli", *argv]
from rlcli.cli.app import app
app()
"""
)


def wall(src: str, argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", LAUNCH, src, "wall", *argv], cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv} exited {done.returncode}: {done.stderr[-2000:]}")
    return elapsed


def first_iteration(src: str, out: str) -> float:
    # The LAUNCH probe replaces the trainer's _iteration, which it imports first; the rest of the
    # imports happen as in a real run, since rlcli.trainer.loop is part of what `train` loads anyway.
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, src, "first-iteration", "train", "ppo_cartpole", "--out", out, "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    for line in done.stderr.splitlines():
        if line.startswith("FIRST_ITERATION"):
            return float(line.split()[1])
    raise SystemExit(f"no first iteration: {done.stderr[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--src", default="", help="another checkout's src/ folder to measure instead")
    args = parser.parse_args()
    if not Path("/proc/self/stat").exists():
        raise SystemExit("needs Linux /proc for the first-iteration figure")
    out = "/tmp/rlcli-startup-runs"
    cases = {
        "rlcli --version": lambda: wall(args.src, ["--version"]),
        "rlcli validate presets/": lambda: wall(args.src, ["validate", "presets/"]),
        "train: process start to first iteration": lambda: first_iteration(args.src, out),
    }
    print(f"{'case':42} {'median s':>9} {'min':>6} {'max':>6} {'bar s':>6}")
    for name, case in cases.items():
        case()  # warm the file cache
        times = [case() for _ in range(args.repeat)]
        print(f"{name:42} {statistics.median(times):9.2f} {min(times):6.2f} {max(times):6.2f} {BARS[name]:6.1f}")
    print(f"({os.cpu_count()} cores, Python {sys.version.split()[0]}, src {args.src or 'installed'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
