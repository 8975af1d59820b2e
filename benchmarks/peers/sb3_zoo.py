"""Stable-Baselines3 on one RL-Zoo table cell with the Zoo's own hyperparameters: ``rl_zoo3.train`` as the
Zoo runs it (its hyperparams/*.yml, torch's default threads unless SB3_THREADS=N pins them, no
evaluation callback, no saving between), with the time
of ``model.learn`` alone measured. Given EPISODES, the trained model is then scored as rlcli's zoo_table
scores its own: the mean return of that many deterministic episodes on a fresh copy of the task
(observation statistics copied over where the Zoo normalizes them); that play is not timed.

Runs in the peer venv (benchmarks/peers/requirements-rlzoo.txt, plus gymnasium[box2d] for LunarLander);
benchmarks/peers/sb3_zoo_wall.sh (the seconds) and sb3_zoo_score.sh (the scores) call it. Prints one JSON
line: algo, env, timesteps, seed, learn_s, and with EPISODES final_eval, final_std, episodes.

    python sb3_zoo.py ALGO ENV TIMESTEPS SEED [EPISODES]
"""

import json
import os
import sys
import tempfile
import time

from rl_zoo3 import exp_manager
from rl_zoo3.train import train

algo, env, steps, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
episodes = int(sys.argv[5]) if len(sys.argv) > 5 else 0
measured = {}
learn = exp_manager.ExperimentManager.learn


def evaluate(manager, model) -> None:
    import numpy as np
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecNormalize

    test = manager.create_envs(1, eval_env=True, no_log=True)
    trained = model.get_env()
    if isinstance(test, VecNormalize) and isinstance(trained, VecNormalize):
        test.obs_rms = trained.obs_rms
        test.training = False
        test.norm_reward = False
    test.seed(10_000 + seed)
    returns, _ = evaluate_policy(model, test, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True)
    measured.update(final_eval=float(np.mean(returns)), final_std=float(np.std(returns)), episodes=len(returns))


def timed(self, model):
    start = time.perf_counter()
    learn(self, model)
    measured["learn_s"] = round(time.perf_counter() - start, 2)
    if episodes:
        evaluate(self, model)


exp_manager.ExperimentManager.learn = timed
with tempfile.TemporaryDirectory() as logs:
    sys.argv = [
        "train",
        "--algo",
        algo,
        "--env",
        env,
        "-n",
        str(steps),
        "--seed",
        str(seed),
        "--eval-freq",
        "-1",
        "--device",
        "cpu",
        "--log-folder",
        logs,
        "--verbose",
        "0",
    ]
    # SB3_THREADS=N pins torch's threads as the Zoo's --num-threads does; unset, torch's default (every
    # core), as SB3 and the Zoo ship.
    if os.environ.get("SB3_THREADS"):
        sys.argv += ["--num-threads", os.environ["SB3_THREADS"]]
    train()
import torch  # noqa: E402 - after the run: the threads it ran on

measured["threads"] = torch.get_num_threads()
print(json.dumps({"algo": algo, "env": env, "timesteps": steps, "seed": seed, **measured}))
