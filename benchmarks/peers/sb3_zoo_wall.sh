#!/usr/bin/env bash
# Wall time beside Stable-Baselines3 2.9.2 (sb3-contrib 2.9.2 for QR-DQN, TQC, TRPO and CrossQ) for one
# RL-Zoo table cell of each algorithm: for each cell,
# rlcli's preset at the Zoo's budget (training seconds from run.json, no early stop), then SB3 with the
# Zoo's hyperparameters (benchmarks/peers/sb3_zoo.py: the seconds of model.learn), one after the
# other, same seed. THREADS=shipped (the default): each as it ships, rlcli's run.threads = "auto" and
# SB3 on torch's default threads (every core); THREADS=N pins both to N. Writes
# benchmarks/results/sb3_wall.json, which zoo_table.py reads, with the settings SB3 ran (the yml entry as
# the Zoo read it and what it passed to the model; the last run's, all runs of a cell share them).
# Venv: python -m venv /tmp/peer-rlzoo && /tmp/peer-rlzoo/bin/pip install -r benchmarks/peers/requirements-rlzoo.txt
# REPEAT=N (default 1) runs each pair N times, alternating, and keeps the median of each side; with
# SEEDS_VARY=1 the N pairs take seeds SEED, SEED+1, ... (each pair one seed on both sides), and with SCORE=1
# each SB3 run is also scored (100 deterministic episodes, after its timing) into sb3_score.json.
# Usage: PEER=/tmp/peer-rlzoo REPEAT=3 [THREADS=shipped|N] bash benchmarks/peers/sb3_zoo_wall.sh [PRESET ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PEER:-/tmp/peer-rlzoo}/bin/python"
SEED="${SEED:-0}"
REPEAT="${REPEAT:-1}"
THREADS="${THREADS:-shipped}"
if [ "$THREADS" = shipped ]; then RLCLI_THREADS='run.threads="auto"'; unset SB3_THREADS; else RLCLI_THREADS="run.threads=$THREADS"; export SB3_THREADS="$THREADS"; fi
# preset  zoo-algo  env  timesteps
CELLS="ppo_cartpole ppo CartPole-v1 100000
a2c_cartpole a2c CartPole-v1 500000
dqn_cartpole dqn CartPole-v1 50000
sac_pendulum sac Pendulum-v1 20000
td3_pendulum td3 Pendulum-v1 20000
ddpg_pendulum ddpg Pendulum-v1 20000
qrdqn_cartpole qrdqn CartPole-v1 50000
tqc_pendulum tqc Pendulum-v1 20000
trpo_cartpole trpo CartPole-v1 100000
crossq_pendulum crossq Pendulum-v1 20000"
OUT="$(mktemp -d /tmp/sb3-wall-XXXX)"
echo "$CELLS" | while read -r preset algo env steps; do
    if [ "$#" -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$preset"; then continue; fi
    rlcli_runs=""
    sb3_runs=""
    FIRST_SEED="$SEED"
    for _ in $(seq "$REPEAT"); do
        rm -rf "$OUT/$preset"
        rlcli train "$preset" --quiet --set "collector.total_frames=$steps" --set run.stop_at_return=1e9 \
            --set "run.seed=$SEED" --set "$RLCLI_THREADS" --set eval.final_episodes=0 \
            --set "run.output_dir=\"$OUT/$preset\"" > /dev/null
        rlcli_runs="$rlcli_runs $(python -c "import glob, json; print(json.load(open(glob.glob('$OUT/$preset/*/run.json')[0]))['wall_time_s'])")"
        row=$("$PY" benchmarks/peers/sb3_zoo.py "$algo" "$env" "$steps" "$SEED" ${SCORE:+100} | tail -1)
        sb3_runs="$sb3_runs $(echo "$row" | python -c "import json, sys; print(json.load(sys.stdin)['learn_s'])")"
        # SCORE=1: the same SB3 run, once timed, is scored (100 deterministic episodes) into sb3_score.json.
        if [ -n "${SCORE:-}" ]; then
            python - "$preset" "$SEED" "$row" <<'PY'
import datetime, json, pathlib, sys
preset, seed, row = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
path = pathlib.Path("benchmarks/results/sb3_score.json")
table = json.loads(path.read_text()) if path.is_file() else {}
table.setdefault(preset, {})[seed] = {**row, "date": datetime.date.today().isoformat()}
path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
PY
        fi
        if [ -n "${SEEDS_VARY:-}" ]; then SEED=$((SEED + 1)); fi
    done
    SEED="$FIRST_SEED"
    python - "$preset" "$steps" "$SEED" "$rlcli_runs" "$sb3_runs" "$THREADS" "$row" <<'PY'
import datetime, json, pathlib, statistics, sys
preset, steps, seed, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[6]
last = json.loads(sys.argv[7])
rlcli_runs, sb3_runs = [float(x) for x in sys.argv[4].split()], [float(x) for x in sys.argv[5].split()]
rlcli_s, sb3_s = statistics.median(rlcli_runs), statistics.median(sb3_runs)
path = pathlib.Path("benchmarks/results/sb3_wall.json")
table = json.loads(path.read_text()) if path.is_file() else {}
table[preset] = {"rlcli_s": rlcli_s, "sb3_s": sb3_s, "timesteps": steps, "seed": seed, "ratio": round(rlcli_s / sb3_s, 3),
                 "threads": threads, "sb3_settings": last["settings"], "sb3_zoo_command": last["zoo_command"],
                 "sb3_versions": last["versions"],
                 "rlcli_runs": rlcli_runs, "sb3_runs": sb3_runs, "date": datetime.date.today().isoformat()}
path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
print(preset, table[preset])
PY
done
rm -rf "$OUT"
