"""rlcli's side of the team peers (benchmarks/peers/benchmarl_vmas.py, sb3_supersuit_spread.py): one preset
trained and then evaluated deterministically, printed as one JSON line in the peers' shape.

It runs, with rlcli's own Python (never a peer venv):

    rlcli train <preset> --quiet --out <new folder> --device cpu --set run.seed=<seed> \\
        --set collector.total_frames=<frames> --set run.threads=<threads> --set eval.final_episodes=0 \\
        [--set optim.lr=<lr>] [--set KEY=VALUE ...]
    rlcli eval <run> --episodes <episodes> --seed <eval seed> --json

In-training evaluation is off in the presets and the final one is turned off here, so ``train_s`` (the
last metrics row's ``wall_time_s``: from the run's start to its last iteration, as BenchMARL's
``Experiment.run()`` on its side) holds training alone; ``process_s`` is the whole ``rlcli train`` process
(start-up, build, the final checkpoint). The evaluation is ``rlcli eval``'s, the same episodes as a final
evaluation of that many episodes.

    python benchmarks/peers/rlcli_teams.py --preset mappo_vmas_balance --seed 0 --frames 300000 --threads 1
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="mappo_vmas_balance")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--frames", type=int, default=None, help="collector.total_frames (default: the preset's)")
    parser.add_argument("--lr", type=float, default=None, help="optim.lr (default: the preset's)")
    parser.add_argument("--threads", default="1", help='run.threads: a number (default 1) or "auto"')
    parser.add_argument("--episodes", type=int, default=200, help="evaluation episodes (default 200)")
    parser.add_argument("--eval-seed", type=int, default=1_000_000)
    parser.add_argument("--out", default="/tmp/peer-rlcli", help="each run gets a new folder under it")
    parser.add_argument("--set", action="append", default=[], dest="sets", metavar="KEY=VALUE")
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    out = tempfile.mkdtemp(prefix="run-", dir=args.out)
    threads = json.dumps(args.threads) if args.threads == "auto" else int(args.threads)
    sets = [f"run.seed={args.seed}", f"run.threads={threads}", "eval.final_episodes=0"]
    sets += [f"collector.total_frames={args.frames}"] if args.frames is not None else []
    sets += [f"optim.lr={args.lr}"] if args.lr is not None else []
    sets += args.sets
    command = [sys.executable, "-m", "rlcli", "train", args.preset, "--quiet", "--out", out, "--device", "cpu"]
    start = time.perf_counter()
    # rlcli's summary goes to stderr so that this script's stdout is the JSON line alone.
    subprocess.run(command + [arg for item in sets for arg in ("--set", item)], check=True, stdout=sys.stderr)
    process = time.perf_counter() - start
    (metrics,) = Path(out).glob("*/metrics.csv")
    with metrics.open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    evaluation = subprocess.run(
        [sys.executable, "-m", "rlcli", "eval", str(metrics.parent), "--episodes", str(args.episodes)]
        + ["--seed", str(args.eval_seed), "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    report = json.loads(evaluation.stdout)
    returns = report["returns"]
    frames = int(rows[-1]["frames"])
    train = float(rows[-1]["wall_time_s"])
    print(
        json.dumps(
            {
                "peer": "rlcli",
                "preset": args.preset,
                "seed": args.seed,
                "frames": frames,
                "train_s": train,
                "process_s": process,
                "frames_per_s": frames / train,
                "eval_episodes": len(returns),
                "eval_seed": args.eval_seed,
                "eval_return_mean": statistics.fmean(returns),
                "eval_return_median": statistics.median(returns),
                "first_iteration_return": _number(rows[0].get("rollout/episode_return_mean")),
                "last_iteration_return": _number(rows[-1].get("rollout/episode_return_mean")),
                "threads": args.threads,
                "sets": sets,
                "run_dir": str(metrics.parent),
                "versions": {name: version(name) for name in ("rlcli", "torch", "vmas", "pettingzoo")},
            }
        )
    )


def _number(text: str | None) -> float | None:
    return float(text) if text not in (None, "") else None


if __name__ == "__main__":
    main()
