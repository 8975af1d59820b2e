"""Deep Deterministic Policy Gradient (Lillicrap et al., 2016): TD3's machinery with a single
critic, an actor update after every critic update and no target smoothing."""

from __future__ import annotations

from typing import Literal

from gymnasium import spaces as gspaces
from pydantic import BaseModel, Field

from rlcli.algos.td3 import METRICS, PHASES, build_deterministic
from rlcli.buffers import ReplayConfig
from rlcli.config.model import SECTION
from rlcli.replay import off_policy_problems


class DDPGConfig(BaseModel):
    # Defaults follow Stable-Baselines3's DDPG defaults (learning rates live in [optim]);
    # presets override them with RL-Zoo's tuned values.
    model_config = SECTION

    name: Literal["ddpg"] = Field(description="Deep Deterministic Policy Gradient, for Box actions.")
    gamma: float = Field(0.99, ge=0, le=1, description="Discount factor.")
    tau: float = Field(0.005, gt=0, le=1, description="Target update weight: 1 copies, below 1 averages.")
    n_step: int = Field(1, ge=1, le=100, description="Steps of reward summed before bootstrapping.")
    batch_size: int = Field(256, ge=1, le=1_000_000, description="Transitions per gradient step.")
    learning_starts: int = Field(
        100, ge=0, description="Frames of uniformly random actions before the first gradient step."
    )
    utd_ratio: float = Field(1.0, gt=0, le=1024, description="Gradient steps per collected frame.")
    noise: Literal["gaussian", "ou"] = Field("gaussian", description="Exploration noise: gaussian or "
                                                                     "ou (Ornstein-Uhlenbeck).")
    noise_scale: float = Field(0.1, ge=0, le=10, description="Exploration noise std (fraction of the half-range).")
    ou_theta: float = Field(0.15, gt=0, le=100, description="Mean reversion of the Ornstein-Uhlenbeck noise.")
    replay: ReplayConfig = Field(default_factory=ReplayConfig, description="The replay buffer.")

    # What makes TD3's machinery DDPG; not fields, so a config cannot set them.
    @property
    def num_critics(self) -> int:
        return 1

    @property
    def policy_delay(self) -> int:
        return 1

    @property
    def target_noise(self) -> float:
        return 0.0

    @property
    def target_noise_clip(self) -> float:
        return 0.0

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others, as (dotted field, message) pairs."""
        return off_policy_problems(self, collector)


CONFIG = DDPGConfig
SUPPORTS = {"observation": (gspaces.Box,), "action": (gspaces.Box,)}
build = build_deterministic
__all__ = ["CONFIG", "SUPPORTS", "PHASES", "METRICS", "build", "DDPGConfig"]
