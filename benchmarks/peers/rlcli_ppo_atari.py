"""rlcli's ppo_breakout timed as benchmarks/peers/sb3_ppo_atari.py times SB3: agent steps per second.

``rlcli train ppo_breakout`` (RL-Zoo's Atari PPO settings) for ``--steps`` agent steps after one
warm-up iteration, with ``run.threads = --threads`` (default ``auto``, as rlcli ships) on the CPU, timed from the run's
metrics.csv; prints one JSON line in the peer script's shape.

It runs, with rlcli's own Python (the one that has rlcli installed; never the SB3 venv):

    rlcli train ppo_breakout --quiet --out /tmp/peer-rlcli/<new folder> --device cpu \\
        --set collector.total_frames=<steps + 1024> --set run.threads=<threads>

and reads metrics.csv, one row per iteration of 1,024 agent steps (8 envs x 128): the first row
(the first collect + update) is the warm-up, as SB3's warm-up ``learn`` of 1,024 steps on its side;
agent steps/s = (frames of the last row - of the first) / (wall_time_s of the last - of the first)
(the ``fps`` column is the run's mean from its start, warm-up included, so it is not used);
``collect_s`` sums ``time/collect_ms`` of the timed rows, ``train_s`` is the rest.

    python benchmarks/peers/rlcli_ppo_atari.py --steps 16384 [--threads auto|N] [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

WARM_UP = 1024  # ppo_breakout's collector.frames_per_batch: one iteration


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16384, help="agent steps timed (default 16384)")
    parser.add_argument(
        "--threads", default="auto", help='run.threads: "auto" (the default, as rlcli ships) or a number'
    )
    parser.add_argument("--out", default="/tmp/peer-rlcli", help="each run gets a new folder under it")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        dest="sets",
        metavar="KEY=VALUE",
        help="a further rlcli override (repeatable)",
    )
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    out = tempfile.mkdtemp(prefix="run-", dir=args.out)
    threads = json.dumps(args.threads) if args.threads == "auto" else int(args.threads)
    sets = [f"collector.total_frames={args.steps + WARM_UP}", f"run.threads={threads}", *args.sets]
    command = [sys.executable, "-m", "rlcli", "train", "ppo_breakout", "--quiet", "--out", out, "--device", "cpu"]
    # rlcli's summary goes to stderr so that this script's stdout is the JSON line alone.
    subprocess.run(command + [arg for item in sets for arg in ("--set", item)], check=True, stdout=sys.stderr)
    (metrics,) = Path(out).glob("*/metrics.csv")
    with metrics.open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    if len(rows) < 2:
        sys.exit(f"{metrics}: {len(rows)} row(s); need the warm-up iteration and at least one more")
    first, last = rows[0], rows[-1]
    steps = int(last["frames"]) - int(first["frames"])
    seconds = float(last["wall_time_s"]) - float(first["wall_time_s"])
    collect = sum(float(row["time/collect_ms"]) for row in rows[1:]) / 1000
    print(
        json.dumps(
            {
                "peer": "rlcli",
                "mode": "train",
                "steps": steps,
                "seconds": seconds,
                "agent_steps_per_s": steps / seconds,
                "collect_s": collect,
                "train_s": seconds - collect,
                "iterations": len(rows) - 1,
                "warm_up_steps": int(first["frames"]),
                "threads": args.threads,
                "sets": args.sets,
                "run_dir": str(metrics.parent),
                "versions": {name: version(name) for name in ("rlcli", "torch", "ale-py", "gymnasium", "numpy")},
            }
        )
    )


if __name__ == "__main__":
    main()
