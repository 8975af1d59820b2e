"""Stable-Baselines3's score on one RL-Zoo table cell, measured as rlcli's zoo_table measures its own:
train with ``rl_zoo3.train`` and the Zoo's hyperparameters at the Zoo's budget (one thread, no evaluation
callback), then the mean return of 100 deterministic episodes on a fresh copy of the task (observation
statistics copied over where the Zoo normalizes them). The Zoo's own table is one run each; this gives
its spread over seeds on this machine, beside rlcli's.

Runs in the peer venv (benchmarks/peers/requirements-rlzoo.txt plus gymnasium[box2d] for LunarLander).
Prints one JSON line: algo, env, timesteps, seed, learn_s, final_eval, final_std, episodes.

    python sb3_zoo_score.py ALGO ENV TIMESTEPS SEED [EPISODES]
"""

import json
import sys
import tempfile
import time

import numpy as np
from rl_zoo3 import exp_manager
from rl_zoo3.train import train
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecNormalize

algo, env, steps, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
episodes = int(sys.argv[5]) if len(sys.argv) > 5 else 100
measured = {}
learn = exp_manager.ExperimentManager.learn


def learn_then_evaluate(self, model):
    start = time.perf_counter()
    learn(self, model)
    measured["learn_s"] = time.perf_counter() - start
    test = self.create_envs(1, eval_env=True, no_log=True)
    trained = model.get_env()
    if isinstance(test, VecNormalize) and isinstance(trained, VecNormalize):
        test.obs_rms = trained.obs_rms
        test.training = False
        test.norm_reward = False
    test.seed(10_000 + seed)
    returns, _ = evaluate_policy(model, test, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True)
    measured.update(final_eval=float(np.mean(returns)), final_std=float(np.std(returns)), episodes=len(returns))


exp_manager.ExperimentManager.learn = learn_then_evaluate
with tempfile.TemporaryDirectory() as logs:
    sys.argv = ["train", "--algo", algo, "--env", env, "-n", str(steps), "--seed", str(seed), "--num-threads", "1",
                "--eval-freq", "-1", "--device", "cpu", "--log-folder", logs, "--verbose", "0"]
    train()
print(json.dumps({"algo": algo, "env": env, "timesteps": steps, "seed": seed, **measured}))
