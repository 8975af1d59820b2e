#!/usr/bin/env bash
# rlcli's mappo_mpe_simple_spread beside parameter-shared PPO through SuperSuit + Stable-Baselines3 2.9, the users'
# workaround (issue 46's bar: rlcli's median return over 3 seeds >= theirs, in <= 1/4 of their wall time), at the
# preset's budget (334,000 frames of 3 agents: 1,002,000 agent-steps) on both sides, 1 torch thread each, one run
# after the other (the order alternates by seed). Every run's JSON line is appended to LOG; the summary (median
# returns, median training times and their ratio) is printed at the end, and again by `--summary LOG` alone.
#
#   bash benchmarks/peers/compare_supersuit.sh [SEEDS="0 1 2"] [LOG=/tmp/peer-supersuit.jsonl]
#   bash benchmarks/peers/compare_supersuit.sh --summary LOG
#
# SUPERSUIT_PYTHON (default /tmp/peer-supersuit/bin/python: the venv of requirements-supersuit.txt) and
# RLCLI_PYTHON (default python) choose the interpreters; CPU pins every run to one core (taskset).
set -euo pipefail
cd "$(dirname "$0")/../.."
summary() {
  python - "$1" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
out = {}
for peer in ("rlcli", "sb3_supersuit"):
    mine = [r for r in runs if r["peer"] == peer]
    if mine:
        out[peer] = {
            "seeds": [r["seed"] for r in mine],
            "eval_return_means": [round(r["eval_return_mean"], 2) for r in mine],
            "median_return": statistics.median(r["eval_return_mean"] for r in mine),
            "median_train_s": statistics.median(r["train_s"] for r in mine),
        }
if len(out) == 2:
    out["wall_ratio_rlcli_over_sb3"] = out["rlcli"]["median_train_s"] / out["sb3_supersuit"]["median_train_s"]
print(json.dumps(out))
PY
}
if [ "${1:-}" = --summary ]; then summary "$2"; exit; fi
seeds=${1:-0 1 2}; log=${2:-/tmp/peer-supersuit.jsonl}
ss=${SUPERSUIT_PYTHON:-/tmp/peer-supersuit/bin/python}; rl=${RLCLI_PYTHON:-python}
pin=(); if [ -n "${CPU:-}" ]; then pin=(taskset -c "$CPU"); fi
run_rlcli() {
  "${pin[@]}" "$rl" benchmarks/peers/rlcli_teams.py --preset mappo_mpe_simple_spread --seed "$1" --threads 1 \
    2>/dev/null | tail -1 | tee -a "$log" | cut -c1-300
}
run_sb3() {
  "${pin[@]}" "$ss" benchmarks/peers/sb3_supersuit_spread.py --seed "$1" --steps 1002000 --threads 1 \
    2>/dev/null | tail -1 | tee -a "$log" | cut -c1-300
}
for seed in $seeds; do
  if (( seed % 2 )); then run_sb3 "$seed"; run_rlcli "$seed"; else run_rlcli "$seed"; run_sb3 "$seed"; fi
done
summary "$log"
