#!/usr/bin/env bash
# RL-Zoo 2.9.2's hyperparameter search for PPO on CartPole-v1 (24 trials of 60k steps, 2 at a time, TPE,
# median pruner), timed; prints one JSON line: wall seconds, the best trial's value, the trial states.
# Venv: benchmarks/peers/requirements-rlzoo.txt. Usage: PEER=/tmp/peer-rlzoo bash benchmarks/peers/rlzoo_optimize.sh
set -euo pipefail
PY="${PEER:-/tmp/peer-rlzoo}/bin/python"
OUT="$(mktemp -d /tmp/rlzoo-optimize-XXXX)"
TRIALS="${TRIALS:-24}"
cd "$OUT"
start=$(date +%s.%N)
"$PY" -m rl_zoo3.train --algo ppo --env CartPole-v1 -optimize --n-trials "$TRIALS" --n-jobs 2 --sampler tpe \
    --pruner median -n 60000 --storage "sqlite:///$OUT/zoo.db" --study-name zoo --log-folder "$OUT/logs" \
    > "$OUT/zoo.log" 2>&1 || echo "rl_zoo3 exited with $? (see $OUT/zoo.log); the study is read from its storage" >&2
end=$(date +%s.%N)
"$PY" - "$OUT" "$start" "$end" <<'PY'
import collections, json, sys
import optuna
out, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
study = optuna.load_study(study_name="zoo", storage=f"sqlite:///{out}/zoo.db")
states = collections.Counter(t.state.name for t in study.trials)
trials = study.trials
first = min(t.datetime_start for t in trials)
last = max(t.datetime_complete for t in trials if t.datetime_complete)
print(json.dumps({"tool": "rl_zoo3 2.9.2", "wall_s": round(end - start, 1),
                  "trials_s": round((last - first).total_seconds(), 1), "best": study.best_value,
                  "states": dict(states), "folder": out}))
PY
