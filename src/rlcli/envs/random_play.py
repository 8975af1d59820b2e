"""An env played with uniformly random actions: observations to fit or check a policy's input against,
without a trained policy (an exported file's parity checks, an AOTInductor package's)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlcli.envs.make import make_env


def random_observations(env_cfg, count: int, *, source: str | None = None) -> dict[str, np.ndarray] | np.ndarray:
    """``count`` raw observations of ``env_cfg``'s env (one env, an EnvConfig), met by uniformly random
    actions from seed 0, stacked on a first axis (per key for a ``Dict`` observation). ``source`` names
    the config file in the error an env that cannot be made raises."""
    env = make_env(env_cfg, render=False, source=source)
    env.action_space.seed(0)
    seen: list[Any] = []
    obs, _ = env.reset(seed=0)
    while len(seen) < count:
        seen.append(obs)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
    env.close()
    if isinstance(seen[0], dict):
        return {key: np.stack([o[key] for o in seen]) for key in seen[0]}
    return np.stack(seen)
