"""What every suite takes and returns, and the shipped presets the suites time: a leaf that imports
no suite, so that the suites import it and never one another's table."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import torch

from rlcli.bench.measure import Case, Ratio
from rlcli.config.load import load_config
from rlcli.config.presets import available_presets
from rlcli.config.schema import RunConfig


@dataclass(frozen=True)
class BenchOptions:
    device: torch.device
    quick: bool
    compile: bool
    scratch: Path
    """The bench's own folder, removed however it ends: run folders, stand-in datasets (``stand_ins``, by env id)."""
    stand_ins: dict[str, str] = field(default_factory=dict)
    threads: int | str = 1
    """``run.threads`` of every preset the suites build (``--threads``): a number, or "auto" (each phase
    on the threads auto chooses for it)."""

    @property
    def threads_setting(self) -> str:
        """The ``run.threads`` override of :attr:`threads`."""
        return 'run.threads="auto"' if self.threads == "auto" else f"run.threads={self.threads}"


SuiteOutput = tuple[list[Case], list[Ratio]]
"""A suite's cases, in the order they are timed, and the ratios derived from their figures."""


def preset_configs(opts: BenchOptions, *extra: str) -> dict[str, RunConfig]:
    """Every shipped online preset whose env can be made here, on the bench device, with ``extra``
    overrides (a preset whose optional extra, such as mujoco, is not installed is left out; the
    offline ones are :func:`rlcli.bench.suites.offline.offline_configs`)."""
    device = f'run.device="{opts.device}"'
    online = [name for name in available_presets() if not load_config(name).offline]
    configs = {
        name: load_config(name, [device, "timing.enabled=false", opts.threads_setting, *extra]) for name in online
    }
    return {name: cfg for name, cfg in configs.items() if env_available(cfg.env.id)}


@functools.cache
def env_available(env_id: str) -> bool:
    """Whether gymnasium makes ``env_id`` here (False where its optional extra is missing)."""
    import gymnasium as gym

    from rlcli.envs import mujoco_warnings_once

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
