"""Stable-Baselines3's PPO on Breakout with RL-Zoo's Atari settings: agent steps per second.

The peer figure of rlcli's ``ppo_breakout`` (issue 19: rlcli's agent steps/s >= 1.3x SB3's, 1 torch
thread, the two measured one after the other on the same machine; ``compare_ppo_atari.sh`` does that).

What runs: RL-Zoo's hyperparams/ppo.yml (atari), as SB3's users run it: ``CnnPolicy`` on
``BreakoutNoFrameskip-v4`` (registered by ale-py) through ``make_atari_env(n_envs=8)`` (SB3's
``AtariWrapper``, its default DummyVecEnv) and ``VecFrameStack(n_stack=4)`` (PPO adds its own
``VecTransposeImage``); 128 steps per env, 4 epochs, batch 256, learning rate 2.5e-4 and clip range
0.1 both decaying linearly, vf_coef 0.5, ent_coef 0.01; on the CPU, ``torch.set_num_threads(--threads)``
(``--threads 0``: torch's default, every core, as SB3 ships).

Timing: a first ``learn`` of 1,024 agent steps (one rollout of 8 x 128 and one update) warms up
(allocation, first kernels); the timed ``learn`` follows on the same model and envs
(``reset_num_timesteps=False``) for ``--steps`` agent steps (a multiple of 1,024; SB3 rounds up to
whole rollouts, and the steps counted are the ones it took). rlcli's side likewise leaves out its
first iteration of 1,024 steps. A callback splits the timed wall time: ``collect_s`` from
``_on_rollout_start`` to ``_on_rollout_end`` (env steps, policy forward, and SB3's GAE, which it
computes before ``_on_rollout_end``), ``train_s`` the rest (the PPO epochs, SB3's bookkeeping).
Prints one JSON line.

``--env-only`` steps the same wrapped vector env (8 envs, AtariWrapper, frame stack, transpose)
with random actions for ``--steps`` agent steps (after 64 untimed ones): agent steps/s (each agent
step is 4 game frames through AtariWrapper's frame skip).

Needs a venv of its own, never rlcli's (versions pinned in requirements-sb3.txt; torch==2.13.0 takes
the CPU build from local disk on this kind of machine, never install a bare torch):

    python3.11 -m venv /tmp/peer-sb3
    /tmp/peer-sb3/bin/pip install -r benchmarks/peers/requirements-sb3.txt
    /tmp/peer-sb3/bin/python benchmarks/peers/sb3_ppo_atari.py --steps 16384 --threads 1
    /tmp/peer-sb3/bin/python benchmarks/peers/sb3_ppo_atari.py --env-only --steps 16384 --threads 1
"""

from __future__ import annotations

import argparse
import json
import time
from importlib.metadata import version

import ale_py
import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_atari_env
from stable_baselines3.common.vec_env import VecFrameStack, VecTransposeImage

ENV_ID = "BreakoutNoFrameskip-v4"
N_ENVS = 8
N_STEPS = 128
WARM_UP = N_ENVS * N_STEPS  # one rollout and one update


class Phases(BaseCallback):
    """Wall seconds spent collecting rollouts (the rest of ``learn`` is training)."""

    def __init__(self):
        super().__init__()
        self.collect = 0.0
        self.started = 0.0
        self.rollouts = 0

    def _on_rollout_start(self) -> None:
        self.started = time.perf_counter()

    def _on_rollout_end(self) -> None:
        self.collect += time.perf_counter() - self.started
        self.rollouts += 1

    def _on_step(self) -> bool:
        return True


def linear(start: float):
    """RL-Zoo's ``lin_<start>``: SB3 passes the progress remaining, 1 -> 0."""
    return lambda progress_remaining: progress_remaining * start


def envs(seed: int):
    return VecFrameStack(make_atari_env(ENV_ID, n_envs=N_ENVS, seed=seed), n_stack=4)


def env_only(steps: int) -> dict:
    vec = VecTransposeImage(envs(0))  # what PPO steps: it wraps channel-last images the same way
    vec.reset()
    rng = np.random.default_rng(0)
    actions = [rng.integers(vec.action_space.n, size=N_ENVS) for _ in range(64)]
    for i in range(64):
        vec.step(actions[i])
    calls = max(1, steps // N_ENVS)
    start = time.perf_counter()
    for i in range(calls):
        vec.step(actions[i % 64])
    seconds = time.perf_counter() - start
    vec.close()
    return {
        "peer": "sb3",
        "mode": "env_only",
        "steps": calls * N_ENVS,
        "seconds": seconds,
        "agent_steps_per_s": calls * N_ENVS / seconds,
    }


def train(steps: int) -> dict:
    model = PPO(
        "CnnPolicy",
        envs(0),
        n_steps=N_STEPS,
        n_epochs=4,
        batch_size=256,
        learning_rate=linear(2.5e-4),
        clip_range=linear(0.1),
        vf_coef=0.5,
        ent_coef=0.01,
        seed=0,
        verbose=0,
        device="cpu",
    )
    model.learn(WARM_UP)
    before = model.num_timesteps
    phases = Phases()
    start = time.perf_counter()
    model.learn(steps, callback=phases, reset_num_timesteps=False)
    seconds = time.perf_counter() - start
    taken = model.num_timesteps - before
    return {
        "peer": "sb3",
        "mode": "train",
        "steps": taken,
        "seconds": seconds,
        "agent_steps_per_s": taken / seconds,
        "collect_s": phases.collect,
        "train_s": seconds - phases.collect,
        "iterations": phases.rollouts,
        "warm_up_steps": before,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16384, help="agent steps timed (default 16384)")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch intra-op threads (default 1; 0: torch's default, as SB3 ships)"
    )
    parser.add_argument("--env-only", action="store_true", help="time the wrapped vector env alone")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    gym.register_envs(ale_py)
    result = env_only(args.steps) if args.env_only else train(args.steps)
    result["threads"] = torch.get_num_threads()
    result["versions"] = {
        name: version(name)
        for name in ("stable_baselines3", "torch", "ale-py", "gymnasium", "numpy", "opencv-python-headless")
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
