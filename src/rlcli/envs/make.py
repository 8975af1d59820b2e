"""Environments from ``[env]``: the vector env of training, with episode statistics recorded by
gymnasium, and the envs evaluation plays on."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from rlcli.config.errors import InputError, single
from rlcli.envs.envpool_envs import EnvPoolVector
from rlcli.envs.families import ATARI, GYMNASIUM_EXTRAS, LIFE_LOST, env_family
from rlcli.envs.masks import MaskFromObservation, VectorMaskFromObservation, observation_masks


def make_envs(cfg, *, return_window: int = 100, source: str | None = None) -> RecordEpisodeStatistics:
    """A vector env for ``cfg`` (an EnvConfig), wrapped to record the last ``return_window`` episodes.

    ``sync`` and ``async`` envs reset in the same step an episode ends
    (``AutoresetMode.SAME_STEP``, the final observation in ``info["final_obs"]``);
    ``vector_entry_point`` envs keep their own mode, usually ``NEXT_STEP``.
    The collector handles both.

    Raises:
        ConfigError: when gymnasium cannot make the env (missing extra, bad kwargs).
    """
    return RecordEpisodeStatistics(_make_vector(cfg, cfg.num_envs, source), buffer_length=return_window)


def eval_envs(cfg, num_envs: int, *, render: bool = False, source: str | None = None) -> VectorEnv:
    """The vector env an evaluation plays on: ``num_envs`` envs of ``cfg`` (an EnvConfig) stepped side
    by side, or with ``render`` one env drawing ``rgb_array`` frames (``envs.envs[0].render()``).

    A vector entry point (ale-py's) is training's own, in its own autoreset mode; any other env is
    stepped in this process (``async`` training envs too: a worker process per evaluation env would
    cost more to start than the episodes take), resetting in the step after an episode ends
    (``NEXT_STEP``), so that the frame drawn after the last step is the episode's last.

    Raises:
        ConfigError: gymnasium cannot make the env.
        InputError: ``render`` for an env that cannot render ``rgb_array`` frames.
    """
    if not render and (cfg.vectorization == "vector_entry_point" or cfg.backend == "envpool"):
        return _make_vector(cfg, num_envs, source)
    makers = [lambda: make_env(cfg, render=render, source=source)] * (1 if render else num_envs)
    return gym.vector.SyncVectorEnv(makers, autoreset_mode=AutoresetMode.NEXT_STEP)


class AtariLives(VectorWrapper):
    """Lost lives in ale-py's vector env, played by the anchors' rules (Stable-Baselines3's
    ``AtariWrapper``, which RL-Zoo scores with):

    - with ``split``, ale-py's ``life_loss_info`` terminations are split in two: episodes end when the
      game does, and a lost life is ``info["life_lost"]``, which the collector stores as a termination
      for learning. ale-py 0.12 reports ``terminated`` at every lost life while the game goes on (no
      reset follows); left as it is, every return would be one life's score and the collector would
      skip the step after each lost life as if the env were resetting. A termination that lost a life
      and left lives is a life loss; any other (the last life, or a game without lives such as Pong)
      ends the game.
    - with ``fire`` (the index of FIRE in the game's action set), the step after a lost life plays
      FIRE whatever the agent chose. ale-py presses FIRE only when a game starts, so a policy that
      never chooses FIRE after a lost life leaves a game such as Breakout waiting until the frame limit
      (a deterministic evaluation stalls for 27,000 agent steps a game). The anchors press FIRE in the
      reset their episodic-life wrapper makes at each lost life; a vector env cannot step one game
      alone, so here the agent's first action of a new life is ignored instead. The env is still a
      Markov decision process (that one action has no effect), so what is learned stays on-policy.
    """

    def __init__(self, env: VectorEnv, *, split: bool, fire: int | None):
        super().__init__(env)
        self.split, self.fire = split, fire
        self.lives = np.zeros(env.num_envs, dtype=np.int64)
        self.fire_next = np.zeros(env.num_envs, dtype=bool)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.lives = np.asarray(info["lives"], dtype=np.int64).copy()
        self.fire_next[:] = False
        return obs, info

    def step(self, actions):
        if self.fire is not None and self.fire_next.any():
            actions = np.where(self.fire_next, np.asarray(self.fire, dtype=np.asarray(actions).dtype), actions)
        obs, reward, terminated, truncated, info = self.env.step(actions)
        lives = np.asarray(info["lives"], dtype=np.int64)
        # ale-py's own test of a lost life: fewer lives, and some left (the last one ends the game).
        lost = (lives < self.lives) & (lives > 0)
        self.lives = lives.copy()
        self.fire_next = lost & ~truncated
        if not self.split:
            return obs, reward, terminated, truncated, info
        life_lost = terminated & lost
        return obs, reward, terminated & ~life_lost, truncated, {**info, LIFE_LOST: life_lost}


def fire_action(envs: VectorEnv) -> int | None:
    """The index of FIRE in the action set of ale-py's vector env ``envs``; None where the game has no FIRE."""
    import ale_py
    from ale_py.vector_env import AtariVectorEnv

    # Called for an ALE/ id made through its vector entry point: ale-py's own vector env.
    assert isinstance(envs.unwrapped, AtariVectorEnv)
    action_set = list(envs.unwrapped.ale.get_action_set())
    return action_set.index(ale_py.Action.FIRE) if ale_py.Action.FIRE in action_set else None


def _make_vector(cfg, num_envs: int, source: str | None) -> VectorEnv:
    """``num_envs`` envs as ``cfg`` asks: EnvPool's pool for ``backend = "envpool"``, else ``gym.make_vec`` with
    :class:`AtariLives` for ale-py's games (lost lives split from game ends, FIRE after a lost life); whatever
    either raises is a ConfigError."""
    kwargs = env_kwargs(cfg)
    envs = (
        _envpool(cfg, num_envs, kwargs, source)
        if cfg.backend == "envpool"
        else _gymnasium(cfg, num_envs, kwargs, source)
    )
    if observation_masks(cfg.action_mask, envs.single_observation_space):
        # The mask is data beside the observation, never the encoder's input (rlcli.envs.masks).
        envs = VectorMaskFromObservation(envs)
    if cfg.backend == "envpool" or env_family(cfg.id) is not ATARI or cfg.vectorization != "vector_entry_point":
        return envs
    fire = fire_action(envs) if kwargs.get("use_fire_reset", True) else None
    split = bool(kwargs.get("life_loss_info"))
    return AtariLives(envs, split=split, fire=fire) if split or fire is not None else envs


def _gymnasium(cfg, num_envs: int, kwargs: dict, source: str | None) -> VectorEnv:
    """``gym.make_vec`` of ``num_envs`` envs of ``cfg`` in its vectorization mode."""
    vector_kwargs = {}
    if cfg.vectorization in ("sync", "async"):
        vector_kwargs["autoreset_mode"] = AutoresetMode.SAME_STEP
    mujoco_warnings_once(cfg.id)
    try:
        return gym.make_vec(
            cfg.id, num_envs=num_envs, vectorization_mode=cfg.vectorization, vector_kwargs=vector_kwargs, **kwargs
        )
    # gymnasium and env constructors raise anything from ImportError (a missing
    # extra such as mujoco) to TypeError (a bad kwarg): all of it is bad input here.
    except Exception as exc:  # noqa: BLE001
        raise _cannot_make(cfg, exc, source) from None


def _envpool(cfg, num_envs: int, kwargs: dict, source: str | None) -> VectorEnv:
    """EnvPool's pool of ``num_envs`` envs for ``cfg`` (checked by the config: the extra, the id, the options)."""
    try:
        return EnvPoolVector(cfg.id, num_envs, kwargs)
    except Exception as exc:  # noqa: BLE001 - EnvPool raises anything from RuntimeError to a failed assert
        raise _cannot_make(cfg, exc, source) from None


class OneOfVector(gym.Env):
    """A one-env vector env as a single env, for evaluation of envs that only training's vector entry
    point preprocesses (ale-py's: frame skip, resizing and stacking run in its C++ vector env).

    ``render`` gives the newest frame of the last observation as rgb ([H, W, 3] uint8): such a vector
    env draws nothing itself, so a video shows what the agent saw.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}

    def __init__(self, envs: VectorEnv):
        self.envs = envs
        self.observation_space = envs.single_observation_space
        self.action_space = envs.single_action_space
        self.render_mode = "rgb_array"
        self.last = None

    def reset(self, *, seed=None, options=None):
        obs, info = self.envs.reset(seed=seed)
        self.last = obs[0]
        return obs[0], {}

    def step(self, action):
        obs, reward, terminated, truncated, _ = self.envs.step(np.asarray([action]))
        self.last = obs[0]
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), {}

    def render(self) -> np.ndarray:
        frame = np.asarray(self.last)
        # Stacked frames, newest last: (S, H, W) grey or (S, H, W, 3) colour.
        frame = frame[-1] if frame.ndim == 4 or (frame.ndim == 3 and frame.shape[-1] != 3) else frame
        return np.repeat(frame[..., None], 3, -1) if frame.ndim == 2 else frame

    def close(self):
        self.envs.close()


def env_kwargs(cfg) -> dict:
    """The keyword arguments of ``gym.make`` for ``cfg`` (an EnvConfig): its ``kwargs`` over its
    family's defaults for a vector entry point, and ``max_episode_steps``."""
    family = env_family(cfg.id)
    defaults = family.vector_defaults if family is not None and cfg.vectorization == "vector_entry_point" else {}
    kwargs = {**defaults, **cfg.kwargs}
    if cfg.max_episode_steps is not None:
        kwargs["max_episode_steps"] = cfg.max_episode_steps
    return kwargs


def _cannot_make(cfg, exc: Exception, source: str | None) -> Exception:
    """The ConfigError of an env that gymnasium cannot make, with the extra to install when known."""
    hint = ""
    if isinstance(exc, gym.error.DependencyNotInstalled):
        for extra, _module in GYMNASIUM_EXTRAS.values():
            if extra in str(exc).lower():
                hint = (
                    f"; install the {extra} extra: pip install 'rlcli[{extra}]' "
                    f"(pip install -e '.[{extra}]' in a clone)"
                )
    return single(source, f"cannot make {cfg.id!r}: {type(exc).__name__}: {exc}{hint}", path="env")


def make_env(cfg, *, render: bool = False, source: str | None = None) -> gym.Env:
    """One env for ``cfg`` (an EnvConfig): the same id, kwargs and ``max_episode_steps`` as training,
    and ``render_mode="rgb_array"`` when ``render``.

    Raises:
        ConfigError: gymnasium cannot make the env.
        InputError: ``render`` for an env that cannot render ``rgb_array`` frames; names the
            modes it has.
    """
    if cfg.backend == "envpool":
        if not render or env_family(cfg.id) is ATARI:
            # A game's frames are its observations, as for ale-py's vector env.
            return OneOfVector(_make_vector(cfg, 1, source))
        # EnvPool draws no frames: a video is drawn by gymnasium's env of the same id and kwargs (the same
        # dynamics: tests/envs/test_envpool_envs.py).
        cfg = cfg.model_copy(update={"backend": "gymnasium"})
    if env_family(cfg.id) is not None and cfg.vectorization == "vector_entry_point":
        # The same vector env as training, for one env: gym.make would give the unprocessed game.
        return OneOfVector(_make_vector(cfg, 1, source))
    env = _make(cfg, None, source)
    if not render:
        return env
    modes = list(env.metadata.get("render_modes") or [])
    env.close()
    if "rgb_array" not in modes:
        raise InputError(
            "--video",
            f"{cfg.id} cannot render rgb_array frames; its render modes: {', '.join(map(str, modes)) or 'none'}",
        )
    try:
        return _make(cfg, "rgb_array", source)
    except Exception as exc:  # noqa: BLE001 - whatever the env raises is about rendering here
        raise InputError(
            "--video", f"{cfg.id} cannot be made with render_mode='rgb_array': {type(exc).__name__}: {exc}"
        ) from None


def _make(cfg, render_mode: str | None, source: str | None) -> gym.Env:
    """``gym.make`` as training configures it; a failure without ``render_mode`` is a ConfigError,
    one with it propagates as raised (the caller blames the rendering)."""
    kwargs = env_kwargs(cfg)
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    mujoco_warnings_once(cfg.id)
    try:
        env = gym.make(cfg.id, **kwargs)
    # As in make_envs: anything an env constructor raises is bad input here.
    except Exception as exc:  # noqa: BLE001
        if render_mode is not None:
            raise
        raise _cannot_make(cfg, exc, source) from None
    return MaskFromObservation(env) if observation_masks(cfg.action_mask, env.observation_space) else env


_MUJOCO_WARNED: set[str] | None = None


def mujoco_warnings_once(env_id: str) -> None:
    """Before a MuJoCo env is made: route MuJoCo's warnings through a handler that prints each one once
    per process (its own prints every one: HalfCheetah's model prints a deprecation at every compile)."""
    global _MUJOCO_WARNED
    if _MUJOCO_WARNED is not None:
        return
    try:
        entry = gym.spec(env_id).entry_point
    except gym.error.Error:
        return
    if not (isinstance(entry, str) and "mujoco" in entry):
        return
    try:
        import mujoco
    except ImportError:
        return
    import sys

    _MUJOCO_WARNED = set()

    def warn_once(message: str, seen=_MUJOCO_WARNED) -> None:
        if message not in seen:
            seen.add(message)
            sys.stderr.write(f"MuJoCo warning: {message}\n")

    mujoco.set_mju_user_warning(warn_once)


def autoreset_mode(envs: VectorEnv) -> AutoresetMode:
    """The autoreset mode the env declares (gymnasium's default, NEXT_STEP, when it declares none)."""
    return envs.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)


def describe_space(space: gym.Space) -> str:
    """A short name for a space: ``Box(4,)``, ``Discrete(2)``, or gymnasium's own text."""
    if isinstance(space, gym.spaces.Box):
        # float32, the usual dtype, goes unsaid (the checkpoints of earlier versions name spaces so).
        return f"Box{space.shape}" + ("" if space.dtype == np.float32 else f" {space.dtype}")
    if isinstance(space, gym.spaces.Discrete):
        return f"Discrete({space.n})"
    return str(space)
