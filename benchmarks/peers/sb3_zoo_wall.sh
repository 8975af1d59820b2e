#!/usr/bin/env bash
# Wall time beside Stable-Baselines3 2.9.2 for one RL-Zoo table cell of each algorithm: for each cell,
# rlcli's preset at the Zoo's budget (training seconds from run.json, no early stop), then SB3 with the
# Zoo's hyperparameters (benchmarks/peers/sb3_zoo_wall.py: the seconds of model.learn), one after the
# other, one thread each, same seed. Writes benchmarks/results/sb3_wall.json, which zoo_table.py reads.
# Venv: python -m venv /tmp/peer-rlzoo && /tmp/peer-rlzoo/bin/pip install -r benchmarks/peers/requirements-rlzoo.txt
# Usage: PEER=/tmp/peer-rlzoo bash benchmarks/peers/sb3_zoo_wall.sh [PRESET ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PEER:-/tmp/peer-rlzoo}/bin/python"
SEED="${SEED:-0}"
# preset  zoo-algo  env  timesteps
CELLS="ppo_cartpole ppo CartPole-v1 100000
a2c_cartpole a2c CartPole-v1 500000
dqn_cartpole dqn CartPole-v1 50000
sac_pendulum sac Pendulum-v1 20000
td3_pendulum td3 Pendulum-v1 20000
ddpg_pendulum ddpg Pendulum-v1 20000"
OUT="$(mktemp -d /tmp/sb3-wall-XXXX)"
echo "$CELLS" | while read -r preset algo env steps; do
    if [ "$#" -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$preset"; then continue; fi
    rlcli train "$preset" --quiet --set "collector.total_frames=$steps" --set run.stop_at_return=1e9 \
        --set "run.seed=$SEED" --set run.threads=1 --set eval.final_episodes=0 \
        --set "run.output_dir=\"$OUT/$preset\"" > /dev/null
    rlcli_s=$(python -c "import glob, json; print(json.load(open(glob.glob('$OUT/$preset/*/run.json')[0]))['wall_time_s'])")
    sb3=$("$PY" benchmarks/peers/sb3_zoo_wall.py "$algo" "$env" "$steps" "$SEED" | tail -1)
    python - "$preset" "$rlcli_s" "$sb3" <<'PY'
import datetime, json, pathlib, sys
preset, rlcli_s, sb3 = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
path = pathlib.Path("benchmarks/results/sb3_wall.json")
table = json.loads(path.read_text()) if path.is_file() else {}
table[preset] = {"rlcli_s": rlcli_s, "sb3_s": sb3["learn_s"], "timesteps": sb3["timesteps"], "seed": sb3["seed"],
                 "ratio": round(rlcli_s / sb3["learn_s"], 3), "date": datetime.date.today().isoformat()}
path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
print(preset, table[preset])
PY
done
rm -rf "$OUT"
