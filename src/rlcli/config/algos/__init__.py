"""The algorithms' config models, one module per family, and the ``AlgoConfig`` union over them.

They live apart from the algorithms so that reading and checking a config never imports torch. Each model
declares what its algorithm can take once, as ``CAPABILITIES``
(:class:`~rlcli.config.algos.capabilities.Capabilities`); :data:`ALGO_CONFIGS` collects the models that
declare it, and the union, the error messages, the lists below and ``rlcli.algos.ALGORITHMS`` (whose
records name these models) read it. What the models share (the ``[algo.replay]`` table, fields defined
once, the :class:`~rlcli.config.fields.AlgoSection` protocol and its shared checks) is in
:mod:`rlcli.config.fields`.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Protocol, TypeGuard, Union, get_args

from pydantic import Field

from rlcli.config.algos import actor_critic, offline, on_policy, teams, value_based
from rlcli.config.algos.actor_critic import CrossQConfig, DDPGConfig, SACConfig, TD3Config, TQCConfig
from rlcli.config.algos.capabilities import Capabilities, words
from rlcli.config.algos.offline import BCConfig, CQLConfig, IQLConfig
from rlcli.config.algos.on_policy import A2CConfig, PPOConfig, REINFORCEConfig, TRPOConfig
from rlcli.config.algos.teams import IPPOConfig, MAPPOConfig
from rlcli.config.algos.value_based import DQNConfig, QRDQNConfig
from rlcli.envs.teams.registry import team_kind

# The family modules, in the order of the docs' tables. A model is an algorithm's when it declares its
# CAPABILITIES: that declaration is the one line a new algorithm adds on this side, so no second list of
# names can drift from the models (config/ cannot read rlcli.algos.ALGORITHMS: it must stay torch-free).
FAMILIES = (on_policy, value_based, actor_critic, offline, teams)


def _declares(value: object, family: ModuleType) -> TypeGuard[type[AlgoConfig]]:
    """Whether ``value`` is a model of ``family`` that declares ``CAPABILITIES``: an algorithm's config model
    (a member of :data:`AlgoConfig`, which the type checker cannot see this test prove)."""
    return isinstance(value, type) and value.__module__ == family.__name__ and "CAPABILITIES" in vars(value)


ALGO_CONFIGS: dict[str, type[AlgoConfig]] = {
    get_args(model.model_fields["name"].annotation)[0]: model
    for family in FAMILIES
    for model in vars(family).values()
    if _declares(model, family)
}
"""Config model of each algorithm, by its ``name``, by family: the models that declare ``CAPABILITIES``.
``rlcli.algos.ALGORITHMS`` maps the same names, in the same order, to the algorithms' records."""


def capabilities(name: str) -> Capabilities:
    """What algorithm ``name`` declares it can take."""
    return ALGO_CONFIGS[name].CAPABILITIES


def titled(names: list[str] | tuple[str, ...]) -> str:
    """The algorithms ``names`` as prose, by their titles: "PPO, A2C and DQN"."""
    return words([capabilities(name).title for name in names])


WITH_MEMORY = tuple(name for name, model in ALGO_CONFIGS.items() if model.CAPABILITIES.memory)
"""The algorithms whose policy may have a memory core (``[network] memory``); each config has
``sequence(steps)``, the steps per sequence of its recurrent update."""

WITH_MASKS = tuple(name for name, model in ALGO_CONFIGS.items() if model.CAPABILITIES.masks is not None)
"""The algorithms that apply the env's action masks (``[env] action_mask``), for some action space."""

MASKED_ACTIONS = words(
    list(
        dict.fromkeys(
            space
            for model in ALGO_CONFIGS.values()
            if (masks := model.CAPABILITIES.masks) is not None
            for space in masks.actions
        )
    )
)
"""The action spaces some algorithm masks, as prose: "Discrete and MultiDiscrete"."""

OFFLINE = tuple(name for name, model in ALGO_CONFIGS.items() if "dataset" in model.CAPABILITIES.sources)
"""The algorithms that learn from a dataset (``[data]``)."""


def _sampling() -> str:
    """The algorithms grouped by when their policy samples: "PPO and A2C (their action distribution); DQN
    with epsilon_end > 0"."""
    groups: dict[str, list[str]] = {}
    for name, model in ALGO_CONFIGS.items():
        groups.setdefault(model.CAPABILITIES.samples, []).append(name)
    return "; ".join(f"{titled(names)} {when}" for when, names in groups.items())


SAMPLING = _sampling()
"""Which policies draw from a distribution, and when, for export's refusal of ``--stochastic``."""


WITH_GSDE = tuple(name for name, model in ALGO_CONFIGS.items() if "use_sde" in model.model_fields)
"""The algorithms that take gSDE (``[algo] use_sde``, for Box actions): those whose config has the field,
which is their declaration of it."""


class _TakesGSDE(Protocol):
    """An ``[algo]`` section of an algorithm in :data:`WITH_GSDE`."""

    @property
    def use_sde(self) -> bool: ...


def _takes_gsde(algo: AlgoConfig) -> TypeGuard[_TakesGSDE]:
    """Whether ``algo``'s model has the ``use_sde`` field (:data:`WITH_GSDE` lists those models)."""
    return algo.name in WITH_GSDE


def gsde_on(algo: AlgoConfig) -> bool:
    """Whether the ``[algo]`` section ``algo`` explores with gSDE."""
    return _takes_gsde(algo) and algo.use_sde


def mask_problems(algo, env, data) -> list[tuple[str, str]]:
    """Problems of an ``[env] action_mask`` that names where masks are ("info", "observation") for an
    algorithm that applies none, or that learns from a dataset (``data``, the ``[data]`` section): what
    ``validate`` checks before any env is made (the action space's check waits for ``--build``:
    ``rlcli.algos.uses_masks``)."""
    if algo is None or env is None or env.action_mask in ("auto", "none"):
        return []
    # Those that learn from envs of this kind: team algorithms for a team env, the others for the rest.
    team_env = team_kind(env.id) is not None
    online = [
        name
        for name in WITH_MASKS
        if "collector" in capabilities(name).sources and capabilities(name).teams == team_env
    ]
    if algo.name in online and data is None:
        return []
    how = "learns from a dataset" if data is not None else "applies none"
    return [
        (
            "env.action_mask",
            f"{algo.name} cannot use action masks ({how}); the algorithms that can: {', '.join(online)}; "
            'set action_mask = "none" (or "auto")',
        )
    ]


TEAMS = tuple(name for name, model in ALGO_CONFIGS.items() if model.CAPABILITIES.teams)
"""The algorithms that train teams (PettingZoo and VMAS envs)."""


def team_problems(algo, env) -> list[tuple[str, str]]:
    """A single-agent algorithm on a team env, or a team algorithm on a gymnasium env: which algorithms fit."""
    if algo is None or env is None:
        return []
    team_env = team_kind(env.id) is not None
    if team_env == (algo.name in TEAMS):
        return []
    if team_env:
        return [
            (
                "algo.name",
                f"{env.id} is a team env (several agents), which {algo.name} does not train; the algorithms "
                f"that train teams: {', '.join(TEAMS)}",
            )
        ]
    singles = [name for name in ALGO_CONFIGS if name not in TEAMS and "collector" in capabilities(name).sources]
    return [
        (
            "algo.name",
            f"{algo.name} trains teams of agents (PettingZoo and VMAS envs), and {env.id} is a single-agent "
            f"gymnasium env; the algorithms that learn from it: {', '.join(singles)}",
        )
    ]


if TYPE_CHECKING:
    # A type checker cannot read a Union built at runtime; it sees the models written out. A test
    # (tests/config/test_capabilities.py) keeps this list equal to ALGO_CONFIGS, which pydantic reads.
    AlgoConfig = Union[  # noqa: UP007
        PPOConfig,
        A2CConfig,
        REINFORCEConfig,
        TRPOConfig,
        DQNConfig,
        QRDQNConfig,
        SACConfig,
        TD3Config,
        DDPGConfig,
        TQCConfig,
        CrossQConfig,
        BCConfig,
        CQLConfig,
        IQLConfig,
        IPPOConfig,
        MAPPOConfig,
    ]
else:
    AlgoConfig = Annotated[
        Union[tuple(ALGO_CONFIGS.values())],  # noqa: UP007
        Field(discriminator="name"),
    ]

__all__ = [
    "ALGO_CONFIGS",
    "MASKED_ACTIONS",
    "OFFLINE",
    "SAMPLING",
    "TEAMS",
    "WITH_GSDE",
    "WITH_MASKS",
    "WITH_MEMORY",
    "A2CConfig",
    "AlgoConfig",
    "BCConfig",
    "CQLConfig",
    "CrossQConfig",
    "DDPGConfig",
    "DQNConfig",
    "IPPOConfig",
    "IQLConfig",
    "MAPPOConfig",
    "PPOConfig",
    "QRDQNConfig",
    "REINFORCEConfig",
    "SACConfig",
    "TD3Config",
    "TQCConfig",
    "TRPOConfig",
    "capabilities",
    "gsde_on",
    "mask_problems",
    "team_problems",
    "titled",
]
