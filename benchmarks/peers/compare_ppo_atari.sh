#!/usr/bin/env bash
# rlcli's ppo_breakout beside Stable-Baselines3's PPO as RL-Zoo builds it from its ppo.yml (issue 19's bar:
# rlcli's agent steps/s >= 1.3x SB3's, 1 torch thread), one after the other on this machine, ROUNDS
# rounds; the order alternates (rlcli first in odd rounds, SB3 first in even ones) so that a drift
# of the machine's load falls on both. Each run leaves out its first 1,024 steps as warm-up.
# Prints each run's JSON line, then the medians and the ratio as one JSON line.
#
#   bash benchmarks/peers/compare_ppo_atari.sh [STEPS=16384] [ROUNDS=3] [THREADS=1|shipped]
#
# THREADS=shipped compares the two as each ships (issue 34): rlcli with run.threads = "auto", SB3 on
# torch's default threads (every core). RLCLI_SETS adds rlcli overrides to every rlcli run (for
# example RLCLI_SETS='run.precision="bf16"').
#
# SB3_PYTHON (default /tmp/peer-sb3/bin/python: the venv of requirements-sb3.txt) and RLCLI_PYTHON
# (default python, the one with rlcli installed) choose the interpreters. Run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-16384}; rounds=${2:-3}; threads=${3:-1}
sb3=${SB3_PYTHON:-/tmp/peer-sb3/bin/python}; rlcli=${RLCLI_PYTHON:-python}
log=$(mktemp); trap 'rm -f "$log"' EXIT
if [ "$threads" = shipped ]; then rlcli_threads=auto; sb3_threads=0; else rlcli_threads=$threads; sb3_threads=$threads; fi
rlcli_sets=(); if [ -n "${RLCLI_SETS:-}" ]; then rlcli_sets=(--set "$RLCLI_SETS"); fi
run_rlcli() { "$rlcli" benchmarks/peers/rlcli_ppo_atari.py --steps "$steps" --threads "$rlcli_threads" "${rlcli_sets[@]}" | tail -1 | tee -a "$log"; }
run_sb3() { "$sb3" benchmarks/peers/sb3_ppo_atari.py --steps "$steps" --threads "$sb3_threads" | tail -1 | tee -a "$log"; }
for round in $(seq "$rounds"); do
  if (( round % 2 )); then run_rlcli; run_sb3; else run_sb3; run_rlcli; fi
done
"$rlcli" - "$log" "$threads" "${RLCLI_SETS:-}" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
median = {peer: statistics.median(r["agent_steps_per_s"] for r in runs if r["peer"] == peer) for peer in ("rlcli", "sb3")}
ratio = median["rlcli"] / median["sb3"]
print(json.dumps({"rounds": len(runs) // 2, "steps": runs[0]["steps"], "threads": sys.argv[2], "rlcli_sets": sys.argv[3],
                  "median_agent_steps_per_s": median, "rlcli_over_sb3": round(ratio, 3), "bar": 1.3,
                  "meets_bar": ratio >= 1.3}))
PY
