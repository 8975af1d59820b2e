"""The users' workaround for teams, measured as it ships: parameter-shared PPO through SuperSuit's agents-as-vector-
envs and Stable-Baselines3, on MPE2's simple_spread_v3 (issue 46's bar beside rlcli's ``mappo_mpe_simple_spread``).

SuperSuit's own wrappers turn the parallel env into a vector env with one entry per agent
(``pettingzoo_env_to_vec_env_v1``) and stack ``--envs`` copies of it for SB3 (``concat_vec_envs_v1`` with
``base_class="stable_baselines3"``); SB3's ``PPO("MlpPolicy")`` then trains one network on every agent's rows,
as SuperSuit's and PettingZoo's tutorials do. SB3's PPO takes the PPO settings rlcli's preset takes (written
into the JSON line), so that the two differ in what the issue compares (a centralized critic and the
implementation), not in their hyperparameters: 40 envs of 3 agents, 50 steps a rollout (6,000 agent-steps, as
the preset's 2,000 frames of 3 agents), 10 epochs of minibatches of 1,200 rows, lr 7e-4, gamma 0.99, GAE
lambda 0.95, clip 0.2, entropy 0.01, value coefficient 1, gradient norm 10, [64, 64] tanh MLPs.

``PPO(seed=...)`` fails on SuperSuit 3.11's vector env (its ``ConcatVecEnv`` has no ``seed()`` for SB3 2.9), so
the seed goes to SB3's ``set_random_seed`` (random, numpy, torch) and the envs' resets are not seeded.

The budget is ``--steps`` agent-steps (SB3's timesteps count one per agent per step); the training wall time is
``model.learn`` alone. Then the trained policy plays ``--episodes`` episodes of the raw parallel env
deterministically, each agent acting on its own observation, seeded from ``--eval-seed``; an episode's
return is counted as rlcli counts a group's (the sum over the episode of the agents' mean reward).

Runs in the SuperSuit peer venv (requirements-supersuit.txt), never rlcli's; prints one JSON line:

    python benchmarks/peers/sb3_supersuit_spread.py --seed 0 --steps 1000000 --threads 1
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from importlib import metadata

ENV_KWARGS = {"N": 3, "local_ratio": 0.5, "max_cycles": 25, "continuous_actions": False}


def evaluate(model, episodes: int, seed: int) -> list[float]:
    """Deterministic episodes of the raw parallel env, each agent acting on its own observation."""
    import numpy as np
    from mpe2 import simple_spread_v3

    env = simple_spread_v3.parallel_env(**ENV_KWARGS)
    returns = []
    for episode in range(episodes):
        observations, _ = env.reset(seed=seed + episode)
        total = 0.0
        while env.agents:
            agents = list(env.agents)
            stacked = np.stack([observations[agent] for agent in agents])
            actions, _ = model.predict(stacked, deterministic=True)
            observations, rewards, _, _, _ = env.step({agent: int(a) for agent, a in zip(agents, actions)})
            total += float(np.mean([rewards[agent] for agent in agents]))
        returns.append(total)
    env.close()
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=1_000_000, help="agent-steps (default 1000000)")
    parser.add_argument("--envs", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--eval-seed", type=int, default=1_000_000)
    args = parser.parse_args()

    import supersuit as ss
    import torch
    from mpe2 import simple_spread_v3
    from stable_baselines3 import PPO
    from stable_baselines3.common.utils import set_random_seed

    torch.set_num_threads(args.threads)
    env = simple_spread_v3.parallel_env(**ENV_KWARGS)
    env = ss.pettingzoo_env_to_vec_env_v1(env)
    env = ss.concat_vec_envs_v1(env, args.envs, num_cpus=0, base_class="stable_baselines3")
    agents = 3
    settings = {
        "n_steps": 50,
        "batch_size": 1200,
        "n_epochs": 10,
        "learning_rate": 7e-4,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "clip_range": 0.2,
        "ent_coef": 0.01,
        "vf_coef": 1.0,
        "max_grad_norm": 10.0,
        "policy_kwargs": {"net_arch": [64, 64], "activation_fn": "torch.nn.Tanh"},
    }
    kwargs = dict(settings, policy_kwargs={"net_arch": [64, 64], "activation_fn": torch.nn.Tanh})
    # SuperSuit 3.11's ConcatVecEnv has no seed() for SB3 2.9's VecEnv wrapper (PPO(seed=...) fails with an
    # AttributeError), so the seed goes to SB3's own seeding of random, numpy and torch; the envs' resets are
    # then not seeded, as for a user of this stack.
    set_random_seed(args.seed)
    model = PPO("MlpPolicy", env, device="cpu", verbose=0, **kwargs)
    start = time.perf_counter()
    model.learn(total_timesteps=args.steps)
    trained = time.perf_counter()
    returns = evaluate(model, args.episodes, args.eval_seed)
    evaluated = time.perf_counter()
    env.close()
    print(
        json.dumps(
            {
                "peer": "sb3_supersuit",
                "task": "mpe2/simple_spread_v3",
                "seed": args.seed,
                "agent_steps": int(model.num_timesteps),
                "frames": int(model.num_timesteps) // agents,
                "train_s": trained - start,
                "agent_steps_per_s": model.num_timesteps / (trained - start),
                "eval_s": evaluated - trained,
                "eval_episodes": len(returns),
                "eval_seed": args.eval_seed,
                "eval_return_mean": statistics.fmean(returns),
                "eval_return_median": statistics.median(returns),
                "env_kwargs": ENV_KWARGS,
                "vec_envs": args.envs,
                "ppo_settings": settings,
                "threads": args.threads,
                "versions": {
                    "python": platform.python_version(),
                    **{
                        d: metadata.version(d)
                        for d in ("stable-baselines3", "supersuit", "pettingzoo", "mpe2", "torch")
                    },
                },
                "argv": sys.argv[1:],
            }
        )
    )


if __name__ == "__main__":
    main()
