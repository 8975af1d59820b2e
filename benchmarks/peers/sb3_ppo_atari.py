"""Stable-Baselines3's PPO on Breakout, built by RL-Zoo itself from its Atari settings: agent steps per second.

The peer figure of rlcli's ``ppo_breakout`` (issue 19: rlcli's agent steps/s >= 1.3x SB3's, 1 torch
thread, the two measured one after the other on the same machine; ``compare_ppo_atari.sh`` does that).

What runs: nothing of the Zoo's settings is copied here. ``rl_zoo3.train --algo ppo --env
BreakoutNoFrameskip-v4 --seed 0 --eval-freq -1 --device cpu [--num-threads N] -n STEPS`` runs as the Zoo
ships it (benchmarks/peers/zoo_run.py): the Zoo reads the ``atari`` entry of its installed
hyperparams/ppo.yml and builds the envs (its ``env_wrapper``, SB3's ``AtariWrapper``, on ``n_envs``
envs in a DummyVecEnv, ``frame_stack`` frames, ``VecTransposeImage``) and the model (``CnnPolicy``, the
entry's n_steps, epochs, batch, schedules and coefficients). Only the Zoo's ``learn`` is replaced, by the
timing below; the JSON line holds the yml entry as read, what the Zoo passed to PPO and the Zoo command.
``--threads 0`` leaves torch's default threads (every core), as SB3 ships; N is the Zoo's
``--num-threads N``.

Timing: a first ``learn`` of one rollout and one update (n_envs x n_steps agent steps: 8 x 128 in the
Zoo's entry) warms up (allocation, first kernels); the timed ``learn`` follows on the same model and envs
(``reset_num_timesteps=False``) for ``--steps`` agent steps (a multiple of the rollout; SB3 rounds up to
whole rollouts, and the steps counted are the ones it took). rlcli's side likewise leaves out its
first iteration of 1,024 steps. A callback splits the timed wall time: ``collect_s`` from
``_on_rollout_start`` to ``_on_rollout_end`` (env steps, policy forward, and SB3's GAE, which it
computes before ``_on_rollout_end``), ``train_s`` the rest (the PPO epochs, SB3's bookkeeping).
Prints one JSON line.

``--env-only`` steps the env the Zoo built for the model (AtariWrapper, frame stack, transpose) with
random actions for ``--steps`` agent steps (after 64 untimed ones): agent steps/s (each agent step is 4
game frames through AtariWrapper's frame skip).

Needs a venv of its own, never rlcli's (requirements-sb3.txt: the RL-Zoo venv's pins plus ale-py and
OpenCV; torch==2.13.0 takes the CPU build from local disk on this kind of machine, never install a bare
torch):

    python3.11 -m venv /tmp/peer-sb3
    /tmp/peer-sb3/bin/pip install -r benchmarks/peers/requirements-sb3.txt
    /tmp/peer-sb3/bin/python benchmarks/peers/sb3_ppo_atari.py --steps 16384 --threads 1
    /tmp/peer-sb3/bin/python benchmarks/peers/sb3_ppo_atari.py --env-only --steps 16384 --threads 1
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from zoo_run import run_zoo, versions, zoo_argv

ENV_ID = "BreakoutNoFrameskip-v4"


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


def env_only(model, steps: int) -> dict:
    vec = model.get_env()  # what PPO steps: the Zoo's envs, channel-first
    n_envs = vec.num_envs
    vec.reset()
    rng = np.random.default_rng(0)
    actions = [rng.integers(vec.action_space.n, size=n_envs) for _ in range(64)]
    for i in range(64):
        vec.step(actions[i])
    calls = max(1, steps // n_envs)
    start = time.perf_counter()
    for i in range(calls):
        vec.step(actions[i % 64])
    seconds = time.perf_counter() - start
    vec.close()
    return {
        "peer": "sb3",
        "mode": "env_only",
        "steps": calls * n_envs,
        "seconds": seconds,
        "agent_steps_per_s": calls * n_envs / seconds,
    }


def train(model, steps: int) -> dict:
    model.learn(model.n_envs * model.n_steps)
    before = model.num_timesteps
    phases = Phases()
    start = time.perf_counter()
    model.learn(steps, callback=phases, reset_num_timesteps=False)
    seconds = time.perf_counter() - start
    taken = model.num_timesteps - before
    model.get_env().close()
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

    def timed(manager, model, zoo_learn, entry) -> dict:
        return env_only(model, args.steps) if args.env_only else train(model, args.steps)

    threads = args.threads if args.threads > 0 else None
    ran = run_zoo(zoo_argv("ppo", ENV_ID, 0, timesteps=args.steps, threads=threads), timed)
    result = {k: v for k, v in ran.items() if k not in ("entry", "settings", "zoo_command")}
    result["threads"] = torch.get_num_threads()
    result.update(settings=ran["settings"], zoo_command=ran["zoo_command"])
    result["versions"] = versions(
        "rl_zoo3", "stable_baselines3", "torch", "ale-py", "gymnasium", "numpy", "opencv-python-headless"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
