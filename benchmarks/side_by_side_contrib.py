"""rlcli beside sb3-contrib, one after the other on this machine: recurrent PPO on CartPoleNoVel-v1
(``ppo_lstm_cartpolenovel`` against ``RecurrentPPO`` run by ``rl_zoo3.train`` from the Zoo's ppo_lstm.yml)
and masked PPO on Taxi (``ppo_taxi_masked`` against ``MaskablePPO`` with the preset's settings: RL-Zoo
has no row for masked Taxi).

Each seed of each side is its own process on 1 torch thread, run one at a time: rlcli's side is
``rlcli train PRESET`` (its process wall time and the training's, from run.json), the peer's is
``benchmarks/peers/sb3_contrib_*.py`` in a venv of its own (sb3-contrib is never a dependency of rlcli;
the RL-Zoo venv of requirements-rlzoo.txt holds both peers). Both report the deterministic final
evaluation over the same number of episodes, and the table gives rlcli's time as a share of the peer's.

    python benchmarks/side_by_side_contrib.py --peer-python /tmp/peer-rlzoo/bin/python --task cartpolenovel --seeds 0
    python benchmarks/side_by_side_contrib.py --peer-python /tmp/peer-rlzoo/bin/python --task taxi --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TASKS = {
    # task: (rlcli preset, its extra --set settings, peer script, the peer's arguments)
    "cartpolenovel": ("ppo_lstm_cartpolenovel", [], "sb3_contrib_recurrent.py", ["--env", "CartPoleNoVel-v1"]),
    "pendulumnovel": ("ppo_lstm_pendulumnovel", [], "sb3_contrib_recurrent.py", ["--env", "PendulumNoVel-v1"]),
    # Both stop once the rolling return of 100 training episodes reaches 8 (gymnasium's threshold), as the preset does.
    "taxi": ("ppo_taxi_masked", [], "sb3_contrib_maskable.py", ["--stop-at-return", "8"]),
}


def run_rlcli(preset: str, settings: list[str], seed: int, episodes: int, out: Path) -> dict:
    """One ``rlcli train`` process: its wall time, the training's, and the final evaluation."""
    args = [sys.executable, "-m", "rlcli", "train", preset, "--out", str(out), "-q"]
    for setting in [f"run.seed={seed}", f"eval.final_episodes={episodes}", "run.threads=1", *settings]:
        args += ["--set", setting]
    started = time.perf_counter()
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    process = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"rlcli failed for seed {seed}:\n{done.stdout}\n{done.stderr}")
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    final = info["final_eval"]
    return {"process_s": process, "train_s": info["wall_time_s"], "eval_mean": final["mean"], "frames": info["frames"]}


def run_peer(python: str, script: str, extra: list[str], seed: int, episodes: int, out: Path) -> dict:
    """One peer process: its wall time, the training's, and the final evaluation."""
    report = out / "peer.json"
    args = [python, str(ROOT / "benchmarks" / "peers" / script), *extra, "--seeds", str(seed)]
    args += ["--eval-episodes", str(episodes), "--json", str(report)]
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    process = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the peer failed for seed {seed}:\n{done.stdout}\n{done.stderr}")
    ran = json.loads(report.read_text(encoding="utf-8"))
    (row,) = ran["seeds"]
    # What the peer ran, as its script wrote it (the Zoo's settings as read and passed, and versions).
    ran_with = {key: ran[key] for key in ("peer", "settings", "torch_threads", "versions") if key in ran}
    return {"process_s": process, "train_s": row["train_seconds"], "eval_mean": row["eval_mean"], "ran": ran_with}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", required=True, help="The python of the venv with sb3-contrib.")
    parser.add_argument("--task", choices=sorted(TASKS), required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--json", type=Path, help="Write the rows here.")
    args = parser.parse_args()
    preset, settings, script, extra = TASKS[args.task]
    rows = []
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as ours, tempfile.TemporaryDirectory() as theirs:
            mine = run_rlcli(preset, settings, seed, args.eval_episodes, Path(ours))
            peer = run_peer(args.peer_python, script, extra, seed, args.eval_episodes, Path(theirs))
        row = {"seed": seed, "rlcli": mine, "sb3_contrib": peer, "share": mine["process_s"] / peer["process_s"]}
        rows.append(row)
        print(
            f"seed {seed}: rlcli {mine['process_s']:.1f} s (training {mine['train_s']:.1f} s), eval "
            f"{mine['eval_mean']:.1f}; sb3-contrib {peer['process_s']:.1f} s (training {peer['train_s']:.1f} s), "
            f"eval {peer['eval_mean']:.1f}; rlcli's process time is {row['share']:.2f} of the peer's",
            flush=True,
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"task": args.task, "preset": preset, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
