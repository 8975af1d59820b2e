"""What every suite takes and returns, and the shipped presets the suites time: a leaf that imports
no suite, so that the suites import it and never one another's table."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import torch

from rlcli.bench.measure import Case, Ratio
from rlcli.config.load import load_config
from rlcli.config.presets import available_presets
from rlcli.config.schema import RunConfig

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.timing import Timer


@dataclass(frozen=True)
class BenchOptions:
    device: torch.device
    quick: bool
    compile: bool
    scratch: Path
    """The bench's own folder, removed however it ends: run folders, stand-in datasets (``stand_ins``, by env id)."""
    stand_ins: dict[str, str] = field(default_factory=dict)
    threads: int | Literal["auto"] = 1
    """``run.threads`` of every preset the suites build (``--threads``): a number, or "auto" (each phase
    on the threads auto chooses for it)."""

    @property
    def threads_setting(self) -> str:
        """The ``run.threads`` override of :attr:`threads`."""
        return 'run.threads="auto"' if self.threads == "auto" else f"run.threads={self.threads}"


class Updates(Protocol):
    """A replay algorithm's gradient step on one normalized sample, as the update cases time it."""

    def update(self, sample: TensorDict, timer: Timer) -> dict[str, torch.Tensor]: ...


class Floor(Protocol):
    """A bare-torch floor (:mod:`rlcli.bench.floors`): the same step as the library's, on one sample."""

    def step(self, batch: TensorDict) -> None: ...


# The timed calls hold their objects as defaults, as the lambdas they replace did: one fast local each, and the
# tests read the algorithm back from ``run.__defaults__``.


def update_call(algo: Updates, sample: TensorDict, timer: Timer) -> Callable[[], dict[str, torch.Tensor]]:
    """The timed call of ``algo``'s gradient step on ``sample``."""

    def run(algo: Updates = algo, sample: TensorDict = sample, timer: Timer = timer) -> dict[str, torch.Tensor]:
        return algo.update(sample, timer)

    return run


def floor_call(bare: Floor, sample: TensorDict) -> Callable[[], None]:
    """The timed call of the floor ``bare``'s step on ``sample``."""

    def run(bare: Floor = bare, sample: TensorDict = sample) -> None:
        bare.step(sample)

    return run


SuiteOutput = tuple[list[Case], list[Ratio]]
"""A suite's cases, in the order they are timed, and the ratios derived from their figures."""


def preset_configs(opts: BenchOptions, *extra: str, teams: bool | None = None) -> dict[str, RunConfig]:
    """Every shipped online preset whose env can be made here, on the bench device, with ``extra``
    overrides (a preset whose optional extra, such as mujoco, is not installed is left out; the
    offline ones are :func:`rlcli.bench.suites.offline.offline_configs`); with ``teams`` True or False, only
    the team presets (IPPO, MAPPO) or only the others."""
    from rlcli.config.algos import TEAMS

    device = f'run.device="{opts.device}"'
    online = [name for name in available_presets() if not load_config(name).offline]
    if teams is not None:
        online = [name for name in online if (load_config(name).algo.name in TEAMS) == teams]
    available = [name for name in online if env_available(load_config(name).env.id)]
    return {
        name: load_config(name, [device, "timing.enabled=false", opts.threads_setting, *extra]) for name in available
    }


@functools.cache
def env_available(env_id: str) -> bool:
    """Whether gymnasium makes ``env_id`` here, or for a team env whether its registry knows it (False where
    its optional extra is missing)."""
    import gymnasium as gym

    from rlcli.envs import mujoco_warnings_once
    from rlcli.envs.teams import team_id_problem, team_kind

    if env_id not in gym.registry and (team_kind(env_id) is not None or env_id.startswith(("vmas/", "mpe2/"))):
        return team_id_problem(env_id, []) is None

    mujoco_warnings_once(env_id)
    try:
        gym.make(env_id).close()
    except gym.error.DependencyNotInstalled:
        return False
    return True


def short_warm_up(cfg: RunConfig) -> RunConfig:
    """``cfg`` with its warm-up (an off-policy ``learning_starts``) cut to one batch: Atari's 100k
    random frames would cost minutes of env steps before the first timed update."""
    if cfg.algo.warm_up <= cfg.collector.frames_per_batch:
        return cfg
    return cfg.model_copy(
        update={"algo": cfg.algo.model_copy(update={"learning_starts": cfg.collector.frames_per_batch})}
    )
