#!/usr/bin/env bash
# Stable-Baselines3 2.9.2's (and sb3-contrib 2.9.2's) own score, seed by seed, on the RL-Zoo cells where
# rlcli misses the Zoo's mean - std, and on the cells the Zoo has no row for (TQC and CrossQ on Pendulum,
# CrossQ on LunarLanderContinuous), where it is the reference: the Zoo's figure is one training run, and this measures how far SB3 itself scatters around it
# at the Zoo's hyperparameters and budget, scored as zoo_table.py scores rlcli (100 deterministic episodes).
# Writes benchmarks/results/sb3_score.json ({cell: {seed: row}}), which zoo_table.py shows beside rlcli.
# Venv: python -m venv /tmp/peer-rlzoo && /tmp/peer-rlzoo/bin/pip install -r benchmarks/peers/requirements-rlzoo.txt 'gymnasium[box2d]==1.4.0'
# Usage: PEER=/tmp/peer-rlzoo SEEDS="0 1 2" bash benchmarks/peers/sb3_zoo_score.sh [PRESET ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PEER:-/tmp/peer-rlzoo}/bin/python"
SEEDS="${SEEDS:-0 1 2}"
# preset  zoo-algo  env  timesteps
CELLS="a2c_lunarlander a2c LunarLander-v3 200000
dqn_cartpole dqn CartPole-v1 50000
dqn_acrobot dqn Acrobot-v1 100000
dqn_mountaincar dqn MountainCar-v0 120000
ppo_pendulum ppo Pendulum-v1 100000
tqc_pendulum tqc Pendulum-v1 20000
crossq_pendulum crossq Pendulum-v1 20000
crossq_lunarlandercontinuous crossq LunarLanderContinuous-v3 200000
trpo_lunarlandercontinuous trpo LunarLanderContinuous-v3 200000
tqc_mountaincarcontinuous tqc MountainCarContinuous-v0 50000"
echo "$CELLS" | while read -r preset algo env steps; do
    if [ "$#" -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$preset"; then continue; fi
    for seed in $SEEDS; do
        row=$("$PY" benchmarks/peers/sb3_zoo.py "$algo" "$env" "$steps" "$seed" 100 | tail -1)
        python - "$preset" "$seed" "$row" <<'PY'
import datetime, json, pathlib, sys
preset, seed, row = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
path = pathlib.Path("benchmarks/results/sb3_score.json")
table = json.loads(path.read_text()) if path.is_file() else {}
table.setdefault(preset, {})[seed] = {**row, "date": datetime.date.today().isoformat()}
path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
print(preset, seed, row["final_eval"], row["learn_s"])
PY
    done
done
