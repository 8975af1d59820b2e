"""Stable-Baselines3's training seconds for one RL-Zoo table cell, with the Zoo's own hyperparameters:
``rl_zoo3.train`` as the Zoo runs it (its hyperparams/*.yml, one thread, no evaluation callback, no
saving between), with the time of ``model.learn`` alone measured.

Runs in the peer venv (benchmarks/peers/requirements-rlzoo.txt); benchmarks/peers/sb3_zoo_wall.sh
calls it for each cell. Prints one JSON line: algo, env, timesteps, seed, learn_s.

    python sb3_zoo_wall.py ALGO ENV TIMESTEPS SEED
"""

import json
import sys
import tempfile
import time

from rl_zoo3 import exp_manager
from rl_zoo3.train import train

algo, env, steps, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
measured = {}
learn = exp_manager.ExperimentManager.learn


def timed(self, model):
    start = time.perf_counter()
    learn(self, model)
    measured["learn_s"] = time.perf_counter() - start


exp_manager.ExperimentManager.learn = timed
with tempfile.TemporaryDirectory() as logs:
    sys.argv = ["train", "--algo", algo, "--env", env, "-n", str(steps), "--seed", str(seed), "--num-threads", "1",
                "--eval-freq", "-1", "--device", "cpu", "--log-folder", logs, "--verbose", "0"]
    train()
print(json.dumps({"algo": algo, "env": env, "timesteps": steps, "seed": seed, "learn_s": round(measured["learn_s"], 2)}))
