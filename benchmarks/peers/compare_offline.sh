#!/usr/bin/env bash
# rlcli's offline preset (iql_pendulum_medium or cql_pendulum_medium) beside d3rlpy 2.8's IQL or CQL
# with the same hyperparameters, on the same Minari dataset, one after the other on this machine, once
# per seed 0 .. SEEDS-1; the order alternates (rlcli first for even seeds, d3rlpy first for odd ones)
# so that a drift of the machine's load falls on both. Both time the gradient steps alone (setup and
# evaluation outside the clock) on THREADS torch threads and score 10 greedy Pendulum-v1 episodes
# reset with seeds 1000000 + i. Prints each run's JSON line, then one JSON line: the median over
# seeds of d3rlpy's train_seconds / rlcli's, each peer's median train_seconds, and each peer's
# eval_return_mean over the seeds (mean and std).
#
#   MINARI_DATASETS_PATH=/tmp/minari-data2 bash benchmarks/peers/compare_offline.sh ALGO [STEPS=50000] [SEEDS=3] [THREADS=1] [DATASET=pendulum/medium-v0] [HIDDEN=256,256]
#
# ALGO is iql or cql; HIDDEN, the hidden widths of every network, is given to both peers (rlcli's
# through network.hidden_sizes, whatever the preset ships). D3RLPY_PYTHON (default /tmp/peer-d3rlpy/bin/python: the venv of
# requirements-d3rlpy.txt) and RLCLI_PYTHON (default python, the one with rlcli installed) choose the
# interpreters. Run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
algo=${1:?usage: compare_offline.sh iql|cql [STEPS] [SEEDS] [THREADS] [DATASET] [HIDDEN]}
steps=${2:-50000}; seeds=${3:-3}; threads=${4:-1}; dataset=${5:-pendulum/medium-v0}; hidden=${6:-256,256}
d3rlpy=${D3RLPY_PYTHON:-/tmp/peer-d3rlpy/bin/python}; rlcli=${RLCLI_PYTHON:-python}
log=$(mktemp); trap 'rm -f "$log"' EXIT
args=(--algo "$algo" --steps "$steps" --threads "$threads" --dataset "$dataset" --hidden "$hidden")
run_rlcli() { "$rlcli" benchmarks/peers/rlcli_offline.py "${args[@]}" --seed "$1" | tail -1 | tee -a "$log"; }
run_d3rlpy() { "$d3rlpy" benchmarks/peers/d3rlpy_offline.py "${args[@]}" --seed "$1" | tail -1 | tee -a "$log"; }
for seed in $(seq 0 $((seeds - 1))); do
  if (( seed % 2 )); then run_d3rlpy "$seed"; run_rlcli "$seed"; else run_rlcli "$seed"; run_d3rlpy "$seed"; fi
done
"$rlcli" - "$log" "$threads" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
by = {peer: {r["seed"]: r for r in runs if r["peer"] == peer} for peer in ("rlcli", "d3rlpy")}
ratios = [by["d3rlpy"][s]["train_seconds"] / by["rlcli"][s]["train_seconds"] for s in sorted(by["rlcli"])]
def score(peer):
    values = [r["eval_return_mean"] for r in by[peer].values()]
    return {"mean": statistics.fmean(values), "std": statistics.pstdev(values), "per_seed": values}
print(json.dumps({"algo": runs[0]["algo"], "steps": runs[0]["steps"], "seeds": len(ratios),
                  "threads": int(sys.argv[2]), "dataset": runs[0]["dataset"], "hidden": runs[0]["hidden"],
                  "median_train_seconds": {p: statistics.median(r["train_seconds"] for r in by[p].values())
                                           for p in by},
                  "d3rlpy_over_rlcli": round(statistics.median(ratios), 3),
                  "ratio_per_seed": [round(r, 3) for r in ratios],
                  "eval_return_mean": {p: score(p) for p in by}}))
PY
