"""The algorithms' config models, one module per family, and the ``AlgoConfig`` union over them.

They live apart from the algorithms so that reading and checking a config never imports torch. Each
algorithm module names its model as ``CONFIG``; :data:`ALGO_CONFIGS` is the one list of algorithms,
which the union, the error messages and ``rlcli.algos.ALGORITHMS`` read. What the models share (the
``[algo.replay]`` table, fields defined once, the :class:`~rlcli.config.fields.AlgoSection` protocol
and its shared checks) is in :mod:`rlcli.config.fields`.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import BaseModel, Field

from rlcli.config.algos.actor_critic import CrossQConfig, DDPGConfig, SACConfig, TD3Config, TQCConfig
from rlcli.config.algos.offline import BCConfig, CQLConfig, IQLConfig
from rlcli.config.algos.on_policy import A2CConfig, PPOConfig, REINFORCEConfig, TRPOConfig
from rlcli.config.algos.value_based import DQNConfig, QRDQNConfig

ALGO_CONFIGS: dict[str, type[BaseModel]] = {
    "ppo": PPOConfig,
    "a2c": A2CConfig,
    "dqn": DQNConfig,
    "sac": SACConfig,
    "td3": TD3Config,
    "ddpg": DDPGConfig,
    "reinforce": REINFORCEConfig,
    "bc": BCConfig,
    "iql": IQLConfig,
    "cql": CQLConfig,
    "qrdqn": QRDQNConfig,
    "tqc": TQCConfig,
    "trpo": TRPOConfig,
    "crossq": CrossQConfig,
}
"""Config model of each algorithm, by its ``name``: the one list of algorithms. ``rlcli.algos.ALGORITHMS``
takes its modules, ``rlcli.algos.<name>``, from it in this order."""

WITH_MEMORY = ("ppo", "a2c", "reinforce")
"""The algorithms whose policy may have a memory core (``[network] memory``); each config has
``sequence(steps)``, the steps per sequence of its recurrent update."""

WITH_GSDE = tuple(name for name, model in ALGO_CONFIGS.items() if "use_sde" in model.model_fields)
"""The algorithms that take gSDE (``[algo] use_sde``, for Box actions): those whose config has the field."""


def gsde_on(algo: BaseModel) -> bool:
    """Whether the ``[algo]`` section ``algo`` explores with gSDE."""
    return algo.name in WITH_GSDE and algo.use_sde


AlgoConfig = Annotated[
    Union[tuple(ALGO_CONFIGS.values())],  # noqa: UP007
    Field(discriminator="name"),
]

__all__ = [
    "ALGO_CONFIGS",
    "WITH_GSDE",
    "WITH_MEMORY",
    "A2CConfig",
    "AlgoConfig",
    "BCConfig",
    "CQLConfig",
    "CrossQConfig",
    "DDPGConfig",
    "DQNConfig",
    "IQLConfig",
    "PPOConfig",
    "QRDQNConfig",
    "REINFORCEConfig",
    "SACConfig",
    "TD3Config",
    "TQCConfig",
    "TRPOConfig",
    "gsde_on",
]
