"""Raw observations of an env met by uniformly random actions: what the export tests check a policy's file
against, and what ``benchmarks/export_aoti.py`` checks an AOTInductor package against (it puts tests/ on
its path, as ``benchmarks/identity.py`` does)."""

from __future__ import annotations

import numpy as np

from rlcli.envs import make_env


def env_observations(env_cfg, count: int) -> dict | np.ndarray:
    """``count`` raw observations of ``env_cfg``'s env (one env), met by random actions from seed 0."""
    env = make_env(env_cfg, render=False, source="test")
    env.action_space.seed(0)
    seen = []
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
