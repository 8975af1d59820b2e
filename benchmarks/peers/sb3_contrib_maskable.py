"""sb3-contrib's MaskablePPO on Taxi under the env's action masks: the peer side of rlcli's
``ppo_taxi_masked`` preset.

Needs a venv of its own (sb3-contrib is never a dependency of rlcli), tested with Python 3.11.7,
torch 2.13.0+cpu, stable-baselines3 2.9.2, sb3-contrib 2.9.2, gymnasium 1.4.0, numpy 2.4.6:

    python3.11 -m venv /tmp/peer-rlzoo
    /tmp/peer-rlzoo/bin/pip install -r benchmarks/peers/requirements-rlzoo.txt

Run from anywhere with that venv's python:

    /tmp/peer-rlzoo/bin/python benchmarks/peers/sb3_contrib_maskable.py --seeds 0 1 2 --json taxi.json
    # as the preset stops (at a rolling return of 8):
    /tmp/peer-rlzoo/bin/python benchmarks/peers/sb3_contrib_maskable.py --seeds 0 1 2 --stop-at-return 8 \\
        --json taxi_stop.json

The task is Taxi-v4: Taxi-v3, which the issue names, is the same game (v4 only fixed the optional
is_rainy and fickle_passenger modes, both off here), and gymnasium 1.4 refuses v3 as deprecated. The
masks are the ones Taxi reports in ``info["action_mask"]`` (moves into walls, pickups and drop-offs
where they are illegal are masked): sb3-contrib's ``ActionMasker`` wrapper asks the env for
``unwrapped.action_mask(current state)``, which is what that info entry holds.

Settings: this script's own. RL-Zoo has no row for this task (rl_zoo3 2.9.2 ships no MaskablePPO
hyperparameters and no Taxi entry), so there is no peer's tuning to run; the settings below mirror
rlcli's preset (presets/ppo_taxi_masked.toml), and the JSON holds them (``settings``) with the defaults
read back from each trained model (``defaults``):

* 16 envs, 2048 frames a rollout (n_steps 128), 4 epochs of 512-sample minibatches;
* gamma 0.99, gae_lambda 0.95, clip_range 0.2, ent_coef 0.01, Adam lr 1e-3 decaying linearly to 0
  over the budget, max_grad_norm 0.5;
* an MLP of [64, 64] tanh (MaskablePPO's default: one for the policy, another for the value), the
  Discrete(500) observation read as a one-hot vector (SB3's preprocessing of Discrete spaces);
* 500_000 frames (``--timesteps``), with gymnasium's threshold 8 for the rolling mean of the last
  100 training episodes. The preset stops training there; this script does so only under
  ``--stop-at-return 8`` (the update of the rollout that reached it still runs, and learning
  stops at the next env step, as rlcli stops after the iteration's update).

Left at MaskablePPO's defaults (rlcli's own defaults where the preset says nothing): vf_coef 0.5,
advantage normalization per minibatch, orthogonal initialization.

What it does for each seed, one after another in one process, on 1 torch thread and the CPU: the
training envs as ``make_vec_env`` builds them (Monitor, then ActionMasker, DummyVecEnv,
``seed=seed``); ``model.learn(timesteps)`` timed alone with ``time.perf_counter`` (train_seconds);
a callback reading the Monitor's finished-episode returns records the frames (and training seconds)
at which the mean of the last 100 episodes first reaches 8, counted only once 100 episodes have
ended, both at the env step it happened (frames_to_threshold) and at the end of that rollout as
rlcli checks it (frames_to_threshold_rollout); None when never. Then a deterministic evaluation with
masks: episode i of N on a fresh env reset with seed 10_000 + i, acting with
``model.predict(obs, action_masks=info["action_mask"], deterministic=True)``. seed_seconds covers
building, learning and evaluating for that seed; process_seconds (in the JSON) runs from the start
of ``main`` (before torch and sb3 are imported) to the moment the JSON is written.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections import deque
from importlib import metadata

ENV_ID = "Taxi-v4"
THRESHOLD = 8.0  # gymnasium's reward_threshold for Taxi
WINDOW = 100
EVAL_SEED_BASE = 10_000

# presets/ppo_taxi_masked.toml in sb3 terms.
SETTINGS = {
    "n_envs": 16,
    "n_steps": 128,  # 16 envs x 128 = 2048 frames per rollout (collector.frames_per_batch)
    "batch_size": 512,
    "n_epochs": 4,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "clip_range": 0.2,
    "ent_coef": 0.01,
    "learning_rate": 1e-3,  # decaying linearly to 0 (optim.lr_schedule = "linear")
    "max_grad_norm": 0.5,
}
DEFAULT_TIMESTEPS = 500_000


def current_mask(env):
    """The legal actions in the env's current state: what Taxi puts in ``info["action_mask"]``."""
    taxi = env.unwrapped
    return taxi.action_mask(taxi.s)


def linear(start: float):
    """A schedule going from ``start`` (progress_remaining 1) to 0 (progress_remaining 0)."""

    def value(progress_remaining: float) -> float:
        return progress_remaining * start

    return value


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("torch", "stable_baselines3", "sb3_contrib", "gymnasium", "numpy"):
        out[dist] = metadata.version(dist)
    return out


def threshold_callback(stop_at: float | None):
    """A callback that watches the rolling mean of the last 100 Monitor episode returns."""
    from stable_baselines3.common.callbacks import BaseCallback

    class RollingReturn(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.returns: deque[float] = deque(maxlen=WINDOW)
            self.episodes = 0
            self.started = 0.0
            self.frames_to_threshold: int | None = None
            self.seconds_to_threshold: float | None = None
            self.frames_to_threshold_rollout: int | None = None
            self.seconds_to_threshold_rollout: float | None = None
            self.stopped_at: int | None = None

        def _on_training_start(self) -> None:
            self.started = time.perf_counter()

        def _mean_reaches(self, target: float) -> bool:
            # Like rlcli's stop_at_return: only over a full window of finished episodes.
            return len(self.returns) == WINDOW and statistics.fmean(self.returns) >= target

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                episode = info.get("episode")
                if episode is not None:
                    self.returns.append(float(episode["r"]))
                    self.episodes += 1
            if self.frames_to_threshold is None and self._mean_reaches(THRESHOLD):
                self.frames_to_threshold = int(self.num_timesteps)
                self.seconds_to_threshold = time.perf_counter() - self.started
            # False ends learn(): at the first step after the update of the rollout that reached it.
            return self.stopped_at is None

        def _on_rollout_end(self) -> None:
            if self.frames_to_threshold_rollout is None and self._mean_reaches(THRESHOLD):
                self.frames_to_threshold_rollout = int(self.num_timesteps)
                self.seconds_to_threshold_rollout = time.perf_counter() - self.started
            if stop_at is not None and self.stopped_at is None and self._mean_reaches(stop_at):
                self.stopped_at = int(self.num_timesteps)

    return RollingReturn()


def evaluate(model, episodes: int) -> list[float]:
    """Deterministic returns under the env's masks of ``episodes`` episodes, each on a fresh env
    reset with seed 10_000 + i."""
    import gymnasium as gym
    import numpy as np

    returns = []
    for i in range(episodes):
        env = gym.make(ENV_ID)
        obs, info = env.reset(seed=EVAL_SEED_BASE + i)
        total, done = 0.0, False
        while not done:
            mask = np.asarray(info["action_mask"], dtype=bool)
            action, _ = model.predict(np.array([obs]), action_masks=mask[None], deterministic=True)
            obs, reward, terminated, truncated, info = env.step(int(action[0]))
            total += float(reward)
            done = terminated or truncated
        env.close()
        returns.append(total)
    return returns


def run_seed(seed: int, timesteps: int, episodes: int, stop_at: float | None) -> dict:
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.wrappers import ActionMasker
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv

    started = time.perf_counter()
    kwargs = {k: v for k, v in SETTINGS.items() if k != "n_envs"}
    kwargs["learning_rate"] = linear(SETTINGS["learning_rate"])
    envs = make_vec_env(
        ENV_ID,
        n_envs=SETTINGS["n_envs"],
        seed=seed,
        vec_env_cls=DummyVecEnv,
        wrapper_class=ActionMasker,
        wrapper_kwargs={"action_mask_fn": current_mask},
    )
    model = MaskablePPO("MlpPolicy", envs, seed=seed, device="cpu", verbose=0, **kwargs)
    watch = threshold_callback(stop_at)

    t0 = time.perf_counter()
    model.learn(total_timesteps=timesteps, callback=watch)
    train_seconds = time.perf_counter() - t0
    envs.close()

    t0 = time.perf_counter()
    returns = evaluate(model, episodes)
    eval_seconds = time.perf_counter() - t0
    last = list(watch.returns)
    return {
        "seed": seed,
        "timesteps": timesteps,
        "frames": int(model.num_timesteps),
        "train_seconds": train_seconds,
        "training_episodes": watch.episodes,
        "final_rolling_return": statistics.fmean(last) if last else None,
        "frames_to_threshold": watch.frames_to_threshold,
        "seconds_to_threshold": watch.seconds_to_threshold,
        "frames_to_threshold_rollout": watch.frames_to_threshold_rollout,
        "stopped_at_frames": watch.stopped_at,
        "seconds_to_threshold_rollout": watch.seconds_to_threshold_rollout,
        "eval_seconds": eval_seconds,
        "seed_seconds": time.perf_counter() - started,
        "eval_episodes": episodes,
        "eval_mean": statistics.fmean(returns),
        "eval_std": statistics.pstdev(returns),
        "eval_min": min(returns),
        "eval_max": max(returns),
        "defaults": {
            "vf_coef": model.vf_coef,
            "clip_range_vf": model.clip_range_vf,
            "normalize_advantage": model.normalize_advantage,
            "net_arch": model.policy.net_arch,
            "activation": model.policy.activation_fn.__name__,
            "ortho_init": model.policy.ortho_init,
        },
    }


def main(argv: list[str] | None = None) -> None:
    process_start = time.perf_counter()
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument(
        "--timesteps",
        type=int,
        default=DEFAULT_TIMESTEPS,
        help=f"training frames (default {DEFAULT_TIMESTEPS}, the preset's)",
    )
    parser.add_argument("--eval-episodes", type=int, default=100)
    parser.add_argument(
        "--stop-at-return",
        type=float,
        default=None,
        metavar="R",
        help="stop once the mean of the last 100 training episodes reaches R at a rollout's end (the preset: 8); default: train the whole budget",
    )
    parser.add_argument("--json", metavar="OUT", help="write the results here")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)

    results = []
    for seed in args.seeds:
        r = run_seed(seed, args.timesteps, args.eval_episodes, args.stop_at_return)
        results.append(r)
        reached = (
            "never"
            if r["frames_to_threshold"] is None
            else f"at {r['frames_to_threshold']} frames ({r['seconds_to_threshold']:.1f} s)"
        )
        if r["stopped_at_frames"] is not None:
            reached += f", stopped after the rollout ending at {r['stopped_at_frames']} frames"
        print(
            f"MaskablePPO {ENV_ID} seed {seed}: {r['frames']} frames, train {r['train_seconds']:.1f} s, "
            f"rolling return {THRESHOLD:g} reached {reached}, deterministic eval over {r['eval_episodes']} episodes "
            f"{r['eval_mean']:.2f} +- {r['eval_std']:.2f} [{r['eval_min']:.2f}, {r['eval_max']:.2f}], "
            f"seed total {r['seed_seconds']:.1f} s",
            flush=True,
        )

    out = {
        "peer": "sb3-contrib MaskablePPO",
        "env": ENV_ID,
        "hyperparameters": "this script's own, mirroring rlcli presets/ppo_taxi_masked.toml "
        "(RL-Zoo 2.9.2 has no row for masked Taxi: no MaskablePPO yml, no Taxi entry)",
        "settings": {**SETTINGS, "learning_rate": ["linear", SETTINGS["learning_rate"]]},
        "threshold": THRESHOLD,
        "stop_at_return": args.stop_at_return,
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
