#!/usr/bin/env bash
# rlcli's team presets beside BenchMARL 1.5.2's own Experiment (issue 46's bar), one run after the other:
# MAPPO on vmas/balance (seeds 0 1 2), IPPO on vmas/balance (seed 0), MAPPO on vmas/navigation (seed 0),
# FRAMES frames each, 1 torch thread on both sides, evaluation off in training and 200 deterministic episodes
# after it. The order alternates (rlcli first in odd runs) so that a drift of the machine's load falls on
# both. Every run's JSON line is appended to LOG; the summary (each case's median return and wall time,
# and rlcli's wall time over BenchMARL's) is printed at the end, and again by `--summary LOG` alone.
#
#   bash benchmarks/peers/compare_benchmarl.sh [FRAMES=300000] [LOG=/tmp/peer-benchmarl.jsonl]
#   bash benchmarks/peers/compare_benchmarl.sh --summary LOG
#
# LR=3e-4 sets the learning rate on both sides (the bar's fallback when BenchMARL's MAPPO at its base
# 5e-5 does not improve on its first iteration); SIDES=benchmarl or SIDES=rlcli runs one side only; CASES
# picks cases by name (balance-mappo-0 ... navigation-mappo-0); CPU pins every run to one core (taskset).
# BENCHMARL_PYTHON (default /tmp/peer-benchmarl/bin/python: the venv of requirements-benchmarl.txt) and
# RLCLI_PYTHON (default python, the one with rlcli installed) choose the interpreters.
set -euo pipefail
cd "$(dirname "$0")/../.."
summary() {
  python - "$1" <<'PY'
import collections, json, statistics, sys
cases = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    run = json.loads(line)
    case = run.get("case") or "?"
    cases[case.rsplit("-", 1)[0]][run["peer"]].append(run)
for case, sides in cases.items():
    out = {"case": case}
    for peer, runs in sides.items():
        out[peer] = {
            "runs": len(runs),
            "seeds": [r["seed"] for r in runs],
            "eval_return_median_of_runs": statistics.median(r["eval_return_mean"] for r in runs),
            "eval_return_means": [round(r["eval_return_mean"], 2) for r in runs],
            "train_s_median": statistics.median(r["train_s"] for r in runs),
            "frames_per_s_median": statistics.median(r["frames_per_s"] for r in runs),
        }
    if "rlcli" in sides and "benchmarl" in sides:
        out["wall_ratio_rlcli_over_benchmarl"] = out["rlcli"]["train_s_median"] / out["benchmarl"]["train_s_median"]
        out["return_rlcli_minus_benchmarl"] = (
            out["rlcli"]["eval_return_median_of_runs"] - out["benchmarl"]["eval_return_median_of_runs"]
        )
    print(json.dumps(out))
PY
}
if [ "${1:-}" = --summary ]; then summary "$2"; exit; fi
frames=${1:-300000}; log=${2:-/tmp/peer-benchmarl.jsonl}
bm=${BENCHMARL_PYTHON:-/tmp/peer-benchmarl/bin/python}; rl=${RLCLI_PYTHON:-python}
sides=${SIDES:-rlcli benchmarl}; pin=(); if [ -n "${CPU:-}" ]; then pin=(taskset -c "$CPU"); fi
lr=(); rl_lr=(); if [ -n "${LR:-}" ]; then lr=(--lr "$LR"); rl_lr=(--lr "$LR"); fi
all="balance-mappo-0 balance-mappo-1 balance-mappo-2 balance-ippo-0 navigation-mappo-0"
run_side() {  # side task algo seed case
  local line
  if [ "$1" = benchmarl ]; then
    line=$("${pin[@]}" "$bm" benchmarks/peers/benchmarl_vmas.py --task "$2" --algo "$3" --seed "$4" \
      --frames "$frames" --threads 1 "${lr[@]}" 2>/dev/null | tail -1)
  else
    line=$("${pin[@]}" "$rl" benchmarks/peers/rlcli_teams.py --preset "$3_vmas_$2" --seed "$4" \
      --frames "$frames" --threads 1 "${rl_lr[@]}" 2>/dev/null | tail -1)
  fi
  python -c 'import json,sys; d=json.loads(sys.argv[1]); d["case"]=sys.argv[2]; print(json.dumps(d))' "$line" "$5" \
    | tee -a "$log" | cut -c1-300
}
n=0
for case in ${CASES:-$all}; do
  IFS=- read -r task algo seed <<<"$case"
  n=$((n + 1)); order=$sides
  if (( n % 2 == 0 )); then order=$(echo "$sides" | tr ' ' '\n' | tac | tr '\n' ' '); fi
  for side in $order; do run_side "$side" "$task" "$algo" "$seed" "$case"; done
done
summary "$log"
