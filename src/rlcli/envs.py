"""Environments from ``[env]``: the vector env of training, with episode statistics recorded by
gymnasium, and single envs as evaluation plays them."""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from rlcli.config.errors import InputError, single


def import_env_packages(names: Sequence[str]) -> None:
    """Import each named, installed module so that its gymnasium registrations take effect.

    This is the command line's ``--env-package``: a choice of the person running the
    command, never of a config file, which cannot name code. From Python, import the
    package (or call ``gym.register_envs(module)``) before :func:`rlcli.build_run`.

    Raises:
        InputError: a module that cannot be imported, with the first line of its error.
    """
    for name in names:
        if not name or not all(part.isidentifier() for part in name.split(".")):
            raise InputError(f"--env-package {name}", "not a module name; give an importable module "
                                                      "such as ale_py or my_envs.register")
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure of a user's module is bad input
            first = (str(exc).strip().splitlines() or [""])[0]
            raise InputError(f"--env-package {name}",
                             f"cannot import it: {type(exc).__name__}: {first}") from None


def check_run_packages(run_dir: Path, given: Sequence[str]) -> None:
    """Raise an InputError unless ``given`` (the ``--env-package`` flags) holds every module that the
    run in ``run_dir`` was trained with (``run.json``'s ``env_packages``).

    ``run.json`` only names them: importing code stays the choice of whoever runs the command,
    never of a file.
    """
    try:
        recorded = json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("env_packages") or []
    except (OSError, ValueError, AttributeError):
        # Written when training starts; without it there is nothing to check.
        return
    missing = [name for name in recorded if name not in given]
    if missing:
        raise InputError(f"run folder {run_dir}", "its env was registered by "
                         + " ".join(f"--env-package {name}" for name in missing) + "; give the same flags again")


def make_envs(cfg, *, return_window: int = 100, source: str | None = None) -> VectorEnv:
    """A vector env for ``cfg`` (an EnvConfig), wrapped to record the last ``return_window`` episodes.

    ``sync`` and ``async`` envs reset in the same step an episode ends
    (``AutoresetMode.SAME_STEP``, the final observation in ``info["final_obs"]``);
    ``vector_entry_point`` envs keep their own mode, usually ``NEXT_STEP``.
    The collector handles both.

    Raises:
        ConfigError: when gymnasium cannot make the env (missing extra, bad kwargs).
    """
    kwargs = env_kwargs(cfg)
    vector_kwargs = {}
    if cfg.vectorization in ("sync", "async"):
        vector_kwargs["autoreset_mode"] = AutoresetMode.SAME_STEP
    try:
        envs = gym.make_vec(
            cfg.id,
            num_envs=cfg.num_envs,
            vectorization_mode=cfg.vectorization,
            vector_kwargs=vector_kwargs,
            **kwargs,
        )
    # gymnasium and env constructors raise anything from ImportError (a missing
    # extra such as mujoco) to TypeError (a bad kwarg): all of it is bad input here.
    except Exception as exc:  # noqa: BLE001
        raise _cannot_make(cfg, exc, source) from None
    return RecordEpisodeStatistics(envs, buffer_length=return_window)


def env_kwargs(cfg) -> dict:
    """The keyword arguments of ``gym.make`` for ``cfg`` (an EnvConfig): its ``kwargs`` and
    ``max_episode_steps``."""
    kwargs = dict(cfg.kwargs)
    if cfg.max_episode_steps is not None:
        kwargs["max_episode_steps"] = cfg.max_episode_steps
    return kwargs


def _cannot_make(cfg, exc: Exception, source: str | None) -> Exception:
    """The ConfigError of an env that gymnasium cannot make, with the extra to install when known."""
    hint = ""
    if isinstance(exc, gym.error.DependencyNotInstalled) and "mujoco" in str(exc).lower():
        hint = "; install the mujoco extra: pip install 'rlcli[mujoco]' (pip install -e '.[mujoco]' in a clone)"
    return single(source, f"cannot make {cfg.id!r}: {type(exc).__name__}: {exc}{hint}", path="env")


def make_env(cfg, *, render: bool = False, source: str | None = None) -> gym.Env:
    """One env for ``cfg`` (an EnvConfig): the same id, kwargs and ``max_episode_steps`` as training,
    and ``render_mode="rgb_array"`` when ``render``.

    Raises:
        ConfigError: gymnasium cannot make the env.
        InputError: ``render`` for an env that cannot render ``rgb_array`` frames; names the
            modes it has.
    """
    env = _make(cfg, None, source)
    if not render:
        return env
    modes = list(env.metadata.get("render_modes") or [])
    env.close()
    if "rgb_array" not in modes:
        raise InputError("--video", f"{cfg.id} cannot render rgb_array frames; its render modes: "
                                    f"{', '.join(map(str, modes)) or 'none'}")
    try:
        return _make(cfg, "rgb_array", source)
    except Exception as exc:  # noqa: BLE001 - whatever the env raises is about rendering here
        raise InputError("--video", f"{cfg.id} cannot be made with render_mode='rgb_array': "
                                    f"{type(exc).__name__}: {exc}") from None


def _make(cfg, render_mode: str | None, source: str | None) -> gym.Env:
    """``gym.make`` as training configures it; a failure without ``render_mode`` is a ConfigError,
    one with it propagates as raised (the caller blames the rendering)."""
    kwargs = env_kwargs(cfg)
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    try:
        return gym.make(cfg.id, **kwargs)
    # As in make_envs: anything an env constructor raises is bad input here.
    except Exception as exc:  # noqa: BLE001
        if render_mode is not None:
            raise
        raise _cannot_make(cfg, exc, source) from None


def autoreset_mode(envs: VectorEnv) -> AutoresetMode:
    """The autoreset mode the env declares (gymnasium's default, NEXT_STEP, when it declares none)."""
    return envs.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)


def describe_space(space: gym.Space) -> str:
    """A short name for a space: ``Box(4,)``, ``Discrete(2)``, or gymnasium's own text."""
    if isinstance(space, gym.spaces.Box):
        return f"Box{space.shape}"
    if isinstance(space, gym.spaces.Discrete):
        return f"Discrete({space.n})"
    return str(space)
