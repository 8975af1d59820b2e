"""Issue 21's bars for ``rlcli tune``, on CartPole-v1 PPO over RL-Zoo's space (benchmarks/spaces/ppo_zoo.toml),
24 trials of 60k frames, 2 at a time, each trial evaluated at its end on 5 deterministic episodes (RL-Zoo's
objective for a 60k search), no early stop at a return threshold:

- ``search``: the study with the median pruner and with ``--pruner none``: wall seconds, frames trained,
  best objective (compare with ``benchmarks/peers/rlzoo_optimize.sh``, run just before or after);
- ``kill``: ``kill -9`` of the tuner once 8 trials have finished, then the same command again: the study
  must end with 24 finished trials, the killed running ones failed;
- ``workers``: two tuners started apart on one SQLite study of 12 trials.

Prints one JSON line per scenario. Run one at a time on a quiet machine:
``python benchmarks/tune_search.py search kill workers``.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = [
    "env.num_envs=8",
    "collector.total_frames=60000",
    "eval.every_frames=60000",
    "eval.episodes=5",
    "eval.deterministic=true",
    'optim.lr_schedule="constant"',
    'algo.clip_schedule="constant"',
    # RL-Zoo trains every trial to its budget: no stop at a rolling return.
    "run.stop_at_return=1e9",
]


def command(out: Path, *, trials: int = 24, pruner: str = "median") -> list[str]:
    rlcli = shutil.which("rlcli") or str(Path(sys.executable).parent / "rlcli")
    sets = [item for s in SETTINGS for item in ("--set", s)]
    return [
        rlcli,
        "tune",
        "ppo_cartpole",
        "--space",
        str(ROOT / "benchmarks/spaces/ppo_zoo.toml"),
        "--trials",
        str(trials),
        "--jobs",
        "2",
        "--pruner",
        pruner,
        "--out",
        str(out),
        *sets,
    ]


def study_figures(out: Path) -> dict:
    study = optuna.load_study(study_name="ppo_cartpole", storage=f"sqlite:///{out / 'ppo_cartpole' / 'study.db'}")
    trials = study.get_trials(deepcopy=False)
    states = collections.Counter(t.state.name for t in trials)
    numbers = [t.number for t in trials]
    return {
        "best": study.best_value,
        "states": dict(states),
        "frames": sum(t.user_attrs.get("frames", 0) for t in trials),
        "unique_numbers": len(set(numbers)) == len(numbers),
        "trials": len(trials),
    }


def search(pruner: str) -> dict:
    out = Path(tempfile.mkdtemp(prefix=f"tune-search-{pruner}-"))
    start = time.perf_counter()
    subprocess.run(command(out, pruner=pruner), check=True, stdout=subprocess.DEVNULL)
    return {
        "scenario": f"search --pruner {pruner}",
        "wall_s": round(time.perf_counter() - start, 1),
        **study_figures(out),
        "folder": str(out),
    }


def finished(out: Path) -> int:
    if not (out / "ppo_cartpole" / "study.db").is_file():
        return 0
    try:
        figures = study_figures(out)
    except Exception:  # noqa: BLE001 - the study is being created
        return 0
    return figures["states"].get("COMPLETE", 0) + figures["states"].get("PRUNED", 0)


def kill() -> dict:
    out = Path(tempfile.mkdtemp(prefix="tune-kill-"))
    proc = subprocess.Popen(command(out), stdout=subprocess.DEVNULL)
    while finished(out) < 8:
        time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    at_kill = study_figures(out)
    start = time.perf_counter()
    subprocess.run(command(out), check=True, stdout=subprocess.DEVNULL)
    return {
        "scenario": "kill -9 after 8 finished, then again",
        "at_kill": at_kill["states"],
        "second_command_s": round(time.perf_counter() - start, 1),
        **study_figures(out),
        "folder": str(out),
    }


def workers() -> dict:
    out = Path(tempfile.mkdtemp(prefix="tune-workers-"))
    first = subprocess.Popen(command(out, trials=12), stdout=subprocess.DEVNULL)
    time.sleep(3)
    second = subprocess.Popen(command(out, trials=12), stdout=subprocess.DEVNULL)
    codes = [first.wait(), second.wait()]
    return {
        "scenario": "two tuners, one SQLite study of 12",
        "exit_codes": codes,
        **study_figures(out),
        "folder": str(out),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+", choices=["search", "kill", "workers"])
    args = parser.parse_args()
    for scenario in args.scenarios:
        results = (
            [search("median"), search("none")]
            if scenario == "search"
            else [kill() if scenario == "kill" else workers()]
        )
        for result in results:
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
