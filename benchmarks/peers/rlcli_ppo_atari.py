"""rlcli's side of benchmarks/peers/sb3_ppo_atari.py: ``ppo_breakout`` (the same settings) for a number
of agent steps on 1 torch thread, timed from its metrics after the first iteration (the warm-up),
printed as one JSON line in the peer script's shape:

    python benchmarks/peers/rlcli_ppo_atari.py --steps 16384 [--threads 1] [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16384)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], dest="sets")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        sets = [f"collector.total_frames={args.steps + 1024}", f"run.threads={args.threads}", *args.sets]
        command = [sys.executable, "-m", "rlcli", "train", "ppo_breakout", "--quiet", "--out", out]
        subprocess.run(command + [arg for item in sets for arg in ("--set", item)], check=True)
        (metrics,) = Path(out).glob("*/metrics.csv")
        rows = list(csv.DictReader(metrics.open(encoding="utf-8")))
    first, last = rows[0], rows[-1]
    steps = int(last["frames"]) - int(first["frames"])
    seconds = float(last["wall_time_s"]) - float(first["wall_time_s"])
    collect = sum(float(row["time/collect_ms"]) for row in rows[1:]) / 1000
    print(json.dumps({"peer": "rlcli", "steps": steps, "seconds": seconds, "agent_steps_per_s": steps / seconds,
                      "collect_s": collect, "train_s": seconds - collect, "threads": args.threads,
                      "sets": args.sets}))


if __name__ == "__main__":
    main()
