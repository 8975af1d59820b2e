"""Stable-Baselines3 on one RL-Zoo table cell with the Zoo's own hyperparameters: ``rl_zoo3.train`` as the
Zoo runs it (its hyperparams/*.yml, torch's default threads unless SB3_THREADS=N pins them, no
evaluation callback, no saving between), with the time
of ``model.learn`` alone measured. Given EPISODES, the trained model is then scored as rlcli's zoo_table
scores its own: the mean return of that many deterministic episodes on a fresh copy of the task
(observation statistics copied over where the Zoo normalizes them); that play is not timed.

Runs in the peer venv (benchmarks/peers/requirements-rlzoo.txt, plus gymnasium[box2d] for LunarLander);
benchmarks/peers/sb3_zoo_wall.sh (the seconds) and sb3_zoo_score.sh (the scores) call it. Prints one JSON
line: algo, env, timesteps, seed, learn_s, and with EPISODES final_eval, final_std, episodes; then
threads, the settings run (benchmarks/peers/zoo_run.py: the yml entry as read, what the Zoo passed to the
model, its normalization), the Zoo command and the package versions.

    python sb3_zoo.py ALGO ENV TIMESTEPS SEED [EPISODES]
"""

import json
import os
import sys
import time

from zoo_run import run_zoo, versions, zoo_argv

algo, env, steps, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
episodes = int(sys.argv[5]) if len(sys.argv) > 5 else 0


def evaluate(manager, model) -> dict:
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
    return {"final_eval": float(np.mean(returns)), "final_std": float(np.std(returns)), "episodes": len(returns)}


def timed(manager, model, zoo_learn, entry) -> dict:
    start = time.perf_counter()
    zoo_learn(manager, model)
    measured = {"learn_s": round(time.perf_counter() - start, 2)}
    if episodes:
        measured.update(evaluate(manager, model))
    return measured


# SB3_THREADS=N pins torch's threads as the Zoo's --num-threads does; unset, torch's default (every
# core), as SB3 and the Zoo ship.
threads = int(os.environ["SB3_THREADS"]) if os.environ.get("SB3_THREADS") else None
ran = run_zoo(zoo_argv(algo, env, seed, timesteps=steps, threads=threads), timed)
import torch  # noqa: E402 - after the run: the threads it ran on

measured = {k: ran[k] for k in ("learn_s", "final_eval", "final_std", "episodes") if k in ran}
row = {"algo": algo, "env": env, "timesteps": steps, "seed": seed, **measured, "threads": torch.get_num_threads()}
row.update(settings=ran["settings"], zoo_command=ran["zoo_command"])
row["versions"] = versions("rl_zoo3", "stable_baselines3", "sb3_contrib", "torch", "gymnasium", "numpy")
print(json.dumps(row))
