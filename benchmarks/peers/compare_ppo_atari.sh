#!/usr/bin/env bash
# rlcli's ppo_breakout beside Stable-Baselines3's PPO with RL-Zoo's Atari settings, one after the
# other, ROUNDS times alternating, on 1 torch thread; prints each run's JSON and the median ratio.
#   bash benchmarks/peers/compare_ppo_atari.sh [STEPS=16384] [ROUNDS=3] [SB3_PYTHON=/tmp/peer-sb3/bin/python]
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-16384}; rounds=${2:-3}; sb3=${3:-/tmp/peer-sb3/bin/python}
log=$(mktemp)
for _ in $(seq "$rounds"); do
  python benchmarks/peers/rlcli_ppo_atari.py --steps "$steps" | tail -1 | tee -a "$log"
  "$sb3" benchmarks/peers/sb3_ppo_atari.py --steps "$steps" | tail -1 | tee -a "$log"
done
python - "$log" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
median = {peer: statistics.median(r["agent_steps_per_s"] for r in runs if r["peer"] == peer) for peer in ("rlcli", "sb3")}
print(json.dumps({"median_agent_steps_per_s": median, "rlcli_over_sb3": median["rlcli"] / median["sb3"]}))
PY
