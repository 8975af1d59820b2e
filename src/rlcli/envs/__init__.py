"""Environments: the tables of env families and extras (:mod:`~rlcli.envs.families`), the
``--env-package`` modules (:mod:`~rlcli.envs.packages`), and the envs made from ``[env]``
(:mod:`~rlcli.envs.make`)."""

from rlcli.envs.envpool_envs import EnvPoolVector, envpool_problems
from rlcli.envs.families import (
    ATARI,
    ENV_FAMILIES,
    GYMNASIUM_EXTRAS,
    LIFE_LOST,
    EnvFamily,
    env_family,
    register_family,
    vector_kwargs_problems,
)
from rlcli.envs.make import (
    AtariLives,
    OneOfVector,
    autoreset_mode,
    describe_space,
    env_kwargs,
    eval_envs,
    make_env,
    make_envs,
    mujoco_warnings_once,
)
from rlcli.envs.packages import check_run_packages, import_env_packages
from rlcli.envs.partial import VELOCITY_MASKED, base_id, register_partial

register_partial()

__all__ = [
    "ATARI",
    "ENV_FAMILIES",
    "GYMNASIUM_EXTRAS",
    "LIFE_LOST",
    "VELOCITY_MASKED",
    "AtariLives",
    "EnvFamily",
    "EnvPoolVector",
    "OneOfVector",
    "autoreset_mode",
    "base_id",
    "check_run_packages",
    "describe_space",
    "eval_envs",
    "env_family",
    "env_kwargs",
    "envpool_problems",
    "import_env_packages",
    "make_env",
    "make_envs",
    "mujoco_warnings_once",
    "register_family",
    "register_partial",
    "vector_kwargs_problems",
]
