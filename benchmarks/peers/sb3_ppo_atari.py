"""Stable-Baselines3's PPO on Breakout with RL-Zoo's Atari settings: agent steps per second, the peer
figure of rlcli's ``ppo_breakout`` (issue 19).

RL-Zoo's hyperparams/ppo.yml (atari): 8 envs of ``BreakoutNoFrameskip-v4`` through ``AtariWrapper``,
a frame stack of 4, ``CnnPolicy``, 128 steps, 4 epochs, batch 256, lr 2.5e-4 and clip 0.1 decaying
linearly, vf_coef 0.5, ent_coef 0.01; SB3's default DummyVecEnv. Needs a venv of its own (never
rlcli's; versions in requirements-sb3.txt):

    python3.11 -m venv /tmp/peer-sb3
    /tmp/peer-sb3/bin/pip install -r benchmarks/peers/requirements-sb3.txt
    /tmp/peer-sb3/bin/python benchmarks/peers/sb3_ppo_atari.py --steps 16384 --threads 1

A first ``learn`` of 2,048 steps warms up (allocation, first kernels); the timed ``learn`` follows.
Prints one JSON line: agent steps/s, and the seconds spent collecting rollouts and training.
``--env-only`` times the wrapped vector env alone with random actions (frames/s).
"""

from __future__ import annotations

import argparse
import json
import time

import ale_py
import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_atari_env
from stable_baselines3.common.vec_env import VecFrameStack

ENV_ID = "BreakoutNoFrameskip-v4"


class Phases(BaseCallback):
    """Wall seconds spent collecting rollouts (the rest of ``learn`` is training)."""

    def __init__(self):
        super().__init__()
        self.collect = 0.0
        self.started = 0.0

    def _on_rollout_start(self) -> None:
        self.started = time.perf_counter()

    def _on_rollout_end(self) -> None:
        self.collect += time.perf_counter() - self.started

    def _on_step(self) -> bool:
        return True


def linear(start: float):
    return lambda progress: progress * start


def envs(seed: int):
    return VecFrameStack(make_atari_env(ENV_ID, n_envs=8, seed=seed), n_stack=4)


def env_only(steps: int) -> dict:
    vec = envs(0)
    vec.reset()
    actions = [np.array([vec.action_space.sample() for _ in range(8)]) for _ in range(64)]
    start = time.perf_counter()
    for i in range(steps // 8):
        vec.step(actions[i % 64])
    return {"peer": "sb3", "mode": "env_only", "frames_per_s": steps / (time.perf_counter() - start)}


def train(steps: int) -> dict:
    model = PPO("CnnPolicy", envs(0), n_steps=128, n_epochs=4, batch_size=256, learning_rate=linear(2.5e-4),
                clip_range=linear(0.1), vf_coef=0.5, ent_coef=0.01, seed=0, verbose=0, device="cpu")
    model.learn(2048)
    phases = Phases()
    start = time.perf_counter()
    model.learn(steps, callback=phases, reset_num_timesteps=False)
    seconds = time.perf_counter() - start
    return {"peer": "sb3", "steps": steps, "seconds": seconds, "agent_steps_per_s": steps / seconds,
            "collect_s": phases.collect, "train_s": seconds - phases.collect}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16384)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--env-only", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    gym.register_envs(ale_py)
    result = env_only(args.steps) if args.env_only else train(args.steps)
    result["threads"] = torch.get_num_threads()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
