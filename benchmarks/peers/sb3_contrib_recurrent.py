"""sb3-contrib's RecurrentPPO on the velocity-hidden control tasks, with RL-Baselines3-Zoo's tuned
hyperparameters (hyperparams/ppo_lstm.yml): the peer side of rlcli's recurrent PPO
(presets/ppo_lstm_cartpolenovel.toml).

Needs a venv of its own (sb3-contrib is never a dependency of rlcli), tested with Python 3.11.7,
torch 2.13.0+cpu, stable-baselines3 2.9.2, sb3-contrib 2.9.2, gymnasium 1.4.0, numpy 2.4.6:

    python3.11 -m venv /work/peers-venv
    /work/peers-venv/bin/pip install torch==2.13.0 'sb3-contrib==2.9.*' 'stable-baselines3==2.9.*' gymnasium

Run from anywhere with that venv's python:

    /work/peers-venv/bin/python benchmarks/peers/sb3_contrib_recurrent.py \\
        --env CartPoleNoVel-v1 --seeds 0 1 2 --json cartpolenovel.json
    /work/peers-venv/bin/python benchmarks/peers/sb3_contrib_recurrent.py \\
        --env PendulumNoVel-v1 --seeds 0 1 2 --json pendulumnovel.json

What it does for each seed, one after another in one process, on 1 torch thread and the CPU:

* the training envs as RL-Zoo builds them: ``make_vec_env`` (a Monitor on each env, DummyVecEnv,
  ``seed=seed``) of the task below, no observation or reward normalization;
* ``RecurrentPPO("MlpLstmPolicy", ...)`` with the Zoo's settings for the task and the policy's
  defaults (an LSTM of 256 units for the actor and a separate one for the critic, then
  net_arch [64, 64] tanh); ``lin_X`` in the Zoo is a linear decay from X to 0 over training;
* ``model.learn(timesteps)`` timed alone with ``time.perf_counter`` (train_seconds);
* a deterministic evaluation: episode i of N on a fresh single env reset with seed 10_000 + i, the
  LSTM state and episode start carried through ``model.predict(..., state=, episode_start=,
  deterministic=True)``; the return is the env's own reward summed over the episode;
* seed_seconds: building the envs and the model, learning and evaluating, for that seed.

process_seconds (in the JSON) runs from the start of ``main`` (before torch and sb3 are imported) to
the moment the JSON is written.

The velocity-hidden tasks are registered here under RL-Zoo's ids: CartPoleNoVel-v1 is CartPole-v1
with observation entries 1 and 3 (cart and pole velocities) set to 0, PendulumNoVel-v1 is
Pendulum-v1 with entry 2 (angular velocity) set to 0.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from importlib import metadata

# RL-Zoo's hyperparams/ppo_lstm.yml, verbatim apart from the names of the schedules.
ZOO = {
    "CartPoleNoVel-v1": {
        "n_envs": 8,
        "n_timesteps": 100_000,
        "kwargs": {
            "n_steps": 32,
            "batch_size": 256,
            "gae_lambda": 0.8,
            "gamma": 0.98,
            "n_epochs": 20,
            "ent_coef": 0.0,
            "learning_rate": ("linear", 0.001),
            "clip_range": ("linear", 0.2),
        },
    },
    "PendulumNoVel-v1": {
        "n_envs": 4,
        "n_timesteps": 100_000,
        "kwargs": {
            "n_steps": 1024,
            "gae_lambda": 0.95,
            "gamma": 0.9,
            "n_epochs": 10,
            "ent_coef": 0.0,
            "learning_rate": 1e-3,
            "clip_range": 0.2,
            "use_sde": True,
            "sde_sample_freq": 4,
        },
    },
}

# The task each id hides velocities of, and which observation entries read 0.
HIDDEN = {"CartPoleNoVel-v1": ("CartPole-v1", (1, 3)), "PendulumNoVel-v1": ("Pendulum-v1", (2,))}

EVAL_SEED_BASE = 10_000


def linear(start: float):
    """A schedule going from ``start`` (progress_remaining 1) to 0 (progress_remaining 0)."""

    def value(progress_remaining: float) -> float:
        return progress_remaining * start

    return value


def make_hidden(base_id: str, hidden: tuple[int, ...], **kwargs):
    """``base_id`` with the observation entries ``hidden`` zeroed (entry point of the NoVel ids)."""
    import gymnasium as gym
    import numpy as np

    env = gym.make(base_id, **kwargs)
    keep = np.ones(env.observation_space.shape, dtype=env.observation_space.dtype)
    keep[list(hidden)] = 0
    return gym.wrappers.TransformObservation(env, lambda obs: obs * keep, env.observation_space)


def register_novel() -> None:
    """Register the velocity-hidden ids with gymnasium (the base env made inside keeps its own time
    limit; the reward threshold is copied)."""
    import gymnasium as gym

    for novel_id, (base_id, hidden) in HIDDEN.items():
        if novel_id in gym.registry:
            continue
        base = gym.spec(base_id)
        gym.register(
            id=novel_id,
            entry_point=make_hidden,
            kwargs={"base_id": base_id, "hidden": hidden},
            reward_threshold=base.reward_threshold,
        )


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("torch", "stable_baselines3", "sb3_contrib", "gymnasium", "numpy"):
        out[dist] = metadata.version(dist)
    return out


def evaluate(model, env_id: str, episodes: int) -> list[float]:
    """Deterministic returns of ``episodes`` episodes, each on a fresh env reset with seed
    10_000 + i, the LSTM state carried from step to step and reset at the episode's start."""
    import gymnasium as gym
    import numpy as np

    returns = []
    for i in range(episodes):
        env = gym.make(env_id)
        obs, _ = env.reset(seed=EVAL_SEED_BASE + i)
        state = None
        start = np.ones((1,), dtype=bool)
        total, done = 0.0, False
        while not done:
            action, state = model.predict(obs[None], state=state, episode_start=start, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(action[0])
            start = np.zeros((1,), dtype=bool)
            total += float(reward)
            done = terminated or truncated
        env.close()
        returns.append(total)
    return returns


def run_seed(env_id: str, seed: int, timesteps: int, episodes: int) -> dict:
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv

    started = time.perf_counter()
    zoo = ZOO[env_id]
    kwargs = {k: (linear(v[1]) if isinstance(v, tuple) else v) for k, v in zoo["kwargs"].items()}
    envs = make_vec_env(env_id, n_envs=zoo["n_envs"], seed=seed, vec_env_cls=DummyVecEnv)
    model = RecurrentPPO("MlpLstmPolicy", envs, seed=seed, device="cpu", verbose=0, **kwargs)

    t0 = time.perf_counter()
    model.learn(total_timesteps=timesteps)
    train_seconds = time.perf_counter() - t0
    envs.close()
    policy = model.policy
    # What the run used besides the Zoo's settings: RecurrentPPO's and MlpLstmPolicy's defaults.
    defaults = {
        "batch_size": model.batch_size,
        "clip_range_vf": model.clip_range_vf,
        "vf_coef": model.vf_coef,
        "max_grad_norm": model.max_grad_norm,
        "normalize_advantage": model.normalize_advantage,
        "lstm_hidden_size": policy.lstm_actor.hidden_size,
        "lstm_layers": policy.lstm_actor.num_layers,
        "critic_lstm": policy.lstm_critic is not None,
        "net_arch": policy.net_arch,
        "activation": policy.activation_fn.__name__,
        "ortho_init": policy.ortho_init,
    }

    t0 = time.perf_counter()
    returns = evaluate(model, env_id, episodes)
    eval_seconds = time.perf_counter() - t0
    return {
        "seed": seed,
        "timesteps": timesteps,
        "frames": int(model.num_timesteps),
        "train_seconds": train_seconds,
        "eval_seconds": eval_seconds,
        "seed_seconds": time.perf_counter() - started,
        "eval_episodes": episodes,
        "eval_mean": statistics.fmean(returns),
        "eval_std": statistics.pstdev(returns),
        "eval_min": min(returns),
        "eval_max": max(returns),
        "defaults": defaults,
    }


def main(argv: list[str] | None = None) -> None:
    process_start = time.perf_counter()
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", required=True, choices=sorted(ZOO))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument(
        "--timesteps", type=int, default=None, help="training frames (default: RL-Zoo's n_timesteps, 100000)"
    )
    parser.add_argument("--eval-episodes", type=int, default=100)
    parser.add_argument("--json", metavar="OUT", help="write the results here")
    args = parser.parse_args(argv)
    timesteps = args.timesteps if args.timesteps is not None else ZOO[args.env]["n_timesteps"]

    import torch

    torch.set_num_threads(1)
    register_novel()

    results = []
    for seed in args.seeds:
        r = run_seed(args.env, seed, timesteps, args.eval_episodes)
        results.append(r)
        print(
            f"RecurrentPPO {args.env} seed {seed}: {r['frames']} frames, train {r['train_seconds']:.1f} s, "
            f"deterministic eval over {r['eval_episodes']} episodes {r['eval_mean']:.2f} +- {r['eval_std']:.2f} "
            f"[{r['eval_min']:.2f}, {r['eval_max']:.2f}], seed total {r['seed_seconds']:.1f} s",
            flush=True,
        )

    out = {
        "peer": "sb3-contrib RecurrentPPO",
        "env": args.env,
        "hyperparameters": "RL-Baselines3-Zoo hyperparams/ppo_lstm.yml",
        "settings": {
            "n_envs": ZOO[args.env]["n_envs"],
            **{k: list(v) if isinstance(v, tuple) else v for k, v in ZOO[args.env]["kwargs"].items()},
        },
        "torch_threads": torch.get_num_threads(),
        "versions": versions(),
        "seeds": results,
    }
    out["process_seconds"] = time.perf_counter() - process_start
    print(f"process total {out['process_seconds']:.1f} s", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
