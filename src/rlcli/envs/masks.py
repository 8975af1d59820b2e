"""Action masks as envs give them: in ``info["action_mask"]`` (gymnasium's Taxi) or as the
``action_mask`` key of a ``Dict`` observation (the PettingZoo and Gymnasium convention).

The observation convention is turned into the info one where envs are made (:class:`MaskFromObservation`,
:class:`VectorMaskFromObservation`): the key leaves the observation and its space, so that the encoder
never sees it, and everything downstream reads masks from ``info`` only. :func:`find_masks` then says,
once, where a run's masks come from, and checks the first one against the action space.
"""

from __future__ import annotations

from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv, VectorWrapper
from gymnasium.vector.utils import batch_space

from rlcli.config.errors import single

KEY = "action_mask"
"""The info key (and the Dict observation key) of an action mask: True or 1 where an action is allowed."""

Where = Literal["info", "observation"]


def mask_size(space: spaces.Space) -> int | None:
    """Entries of one mask for actions of ``space``: ``n`` for Discrete(n), ``sum(nvec)`` for a 1-D
    MultiDiscrete (one mask per sub-action, concatenated, as MaskablePPO takes them); None for spaces
    that take no masks."""
    if isinstance(space, spaces.Discrete):
        return int(space.n)
    if isinstance(space, spaces.MultiDiscrete) and space.nvec.ndim == 1:
        return int(space.nvec.sum())
    return None


def has_observation_mask(space: spaces.Space) -> bool:
    """Whether ``space`` is a Dict with an ``action_mask`` key."""
    return isinstance(space, spaces.Dict) and KEY in space.spaces


def without_mask(space: spaces.Dict) -> spaces.Dict:
    """``space`` less its ``action_mask`` key."""
    return spaces.Dict({name: sub for name, sub in space.spaces.items() if name != KEY})


def _split(obs: dict, info: dict) -> tuple[dict, dict]:
    """A Dict observation less its mask, and ``info`` with the mask under :data:`KEY`."""
    return {name: value for name, value in obs.items() if name != KEY}, {**info, KEY: obs[KEY]}


class MaskFromObservation(gym.Wrapper):
    """A single env whose Dict observation's ``action_mask`` key moves to ``info["action_mask"]``."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        # Wrapped only where the observation is a Dict with the mask's key (observation_masks).
        assert isinstance(env.observation_space, spaces.Dict)
        self.observation_space = without_mask(env.observation_space)

    def reset(self, **kwargs):
        return _split(*self.env.reset(**kwargs))

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        obs, info = _split(obs, info)
        return obs, reward, terminated, truncated, info


class VectorMaskFromObservation(VectorWrapper):
    """:class:`MaskFromObservation` for a vector env, in either autoreset mode: in SAME_STEP mode each
    final observation (``info["final_obs"]``) loses its mask too, which goes to
    ``info["final_info"]["action_mask"]`` ([N, A], zeros in the rows that did not end)."""

    def __init__(self, envs: VectorEnv):
        super().__init__(envs)
        # Wrapped only where the observation is a Dict with the mask's key (observation_masks).
        assert isinstance(envs.single_observation_space, spaces.Dict)
        self.single_observation_space = without_mask(envs.single_observation_space)
        self.observation_space = batch_space(self.single_observation_space, envs.num_envs)

    def reset(self, **kwargs):
        return _split(*self.env.reset(**kwargs))

    def step(self, actions):
        obs, reward, terminated, truncated, info = self.env.step(actions)
        obs, info = _split(obs, info)
        final = info.get("final_obs")
        if final is not None:
            ended = np.array([item is not None for item in final])
            masks = np.zeros_like(np.asarray(info[KEY]))
            stripped = np.empty(len(final), dtype=object)
            for row in np.flatnonzero(ended):
                stripped[row], masks[row] = {n: v for n, v in final[row].items() if n != KEY}, final[row][KEY]
            final_info = {**info.get("final_info", {}), KEY: masks, f"_{KEY}": ended}
            info = {**info, "final_obs": stripped, "final_info": final_info}
        return obs, reward, terminated, truncated, info


def observation_masks(setting: str, space: spaces.Space) -> bool:
    """Whether envs of observation ``space`` are wrapped to move a Dict's mask to info under ``[env]
    action_mask`` = ``setting``."""
    return setting in ("auto", "observation") and has_observation_mask(space)


def _moved(envs: Any) -> bool:
    """Whether a :class:`VectorMaskFromObservation` is among the wrappers of ``envs``."""
    while isinstance(envs, VectorWrapper):
        if isinstance(envs, VectorMaskFromObservation):
            return True
        envs = envs.env
    return False


def find_masks(cfg, envs: VectorEnv, *, seed: int, source: str | None) -> Where | None:
    """Where the masks of ``envs`` (made from ``cfg``, an EnvConfig) come from: the observation's key,
    ``info`` at the first reset (reset with ``seed``; envs without a Dict key only), or None.

    Raises:
        ConfigError: ``cfg.action_mask`` names a place that holds no mask, or the mask found does not
            fit the action space (its shape or dtype).
    """
    env_id, setting, action = cfg.id, cfg.action_mask, envs.single_action_space
    if _moved(envs):
        moved_from = envs.unwrapped.single_observation_space
        # The mask was moved out of a Dict observation (VectorMaskFromObservation).
        assert isinstance(moved_from, spaces.Dict)
        raw = moved_from[KEY]
        # A fixed-size space, as every mask's (only gymnasium's Graph, Sequence and the like have none).
        assert raw.shape is not None and raw.dtype is not None
        _check(env_id, action, tuple(raw.shape), raw.dtype, f"observation key {KEY!r}", source)
        return "observation"
    if setting == "observation":
        raise single(
            source,
            f"{env_id} has observation space {envs.single_observation_space}, which has no {KEY!r} key "
            f'(looked in the observation space); use "info" if the env gives info["{KEY}"], or "auto"',
            path="env.action_mask",
        )
    try:
        _, info = envs.reset(seed=seed)
    except Exception as exc:  # noqa: BLE001 - as the collector's first reset: bad input here
        raise single(source, f"cannot reset the env: {type(exc).__name__}: {exc}", path="env") from None
    if KEY not in info:
        if setting == "info":
            raise single(
                source,
                f'{env_id} gives no info["{KEY}"] at its first reset (info keys: {", ".join(sorted(info)) or "none"}); '
                f'use "observation" if a Dict observation has the key, or "auto"',
                path="env.action_mask",
            )
        return None
    mask = np.asarray(info[KEY])
    _check(env_id, action, mask.shape[1:], mask.dtype, f'info["{KEY}"] at the first reset', source)
    return "info"


def _check(env_id: str, action: spaces.Space, shape: tuple, dtype: np.dtype, where: str, source: str | None) -> None:
    """Raise a ConfigError unless one mask of ``shape`` and ``dtype`` (bool or integer) fits ``action``."""
    size = mask_size(action)
    if shape == (size,) and (dtype == np.bool_ or np.issubdtype(dtype, np.integer)):
        return
    raise single(
        source,
        f"{env_id}'s {where} is {list(shape)} {np.dtype(dtype)}; a mask for {action} actions is [{size}] "
        "(one entry per action, the sub-actions' concatenated for MultiDiscrete), bool or integer 0/1",
        path="env.action_mask",
    )


def info_masks(info: dict, rows: int) -> np.ndarray:
    """[rows, A] bool: the masks of a vector env's ``info`` (True: allowed)."""
    mask = np.asarray(info[KEY])
    return mask if mask.dtype == np.bool_ else mask.astype(bool)


def final_masks(info: dict, ended: np.ndarray) -> np.ndarray:
    """[len(ended), A] bool: the masks of the final observations at the rows ``ended`` of a SAME_STEP
    vector env's ``info`` (its ``final_info``)."""
    return info_masks(info["final_info"], len(ended))[ended]
