"""Config models of the value-based algorithms, which act by an argmax over learned action values
(epsilon-greedy while collecting) and learn from replay: DQN (double DQN a field)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from rlcli.config.fields import (
    BatchSize,
    Discount,
    LearningStarts,
    NStep,
    Replay,
    TargetWeight,
    off_policy_per_rank,
    off_policy_problems,
    replay_warm_up,
    sampled_batch,
)
from rlcli.config.model import SECTION


class DQNConfig(BaseModel):
    SOURCES: ClassVar[tuple[str, ...]] = ("collector",)

    # Defaults follow Stable-Baselines3's DQN defaults (lr and max_grad_norm live in [optim]);
    # presets override them with RL-Zoo's tuned values.
    model_config = SECTION

    name: Literal["dqn"] = Field(description="Deep Q-Network, for discrete actions.")
    gamma: Discount = 0.99
    double: bool = Field(
        True, description="Double DQN: the online network picks the next action, the target network values it."
    )
    loss: Literal["huber", "mse"] = Field("huber", description="TD loss: huber (smooth L1) or mse.")
    n_step: NStep = 1
    batch_size: BatchSize = 32
    learning_starts: LearningStarts = 100
    utd_ratio: float = Field(
        0.25, gt=0, le=1024, description="Gradient steps per collected frame (update-to-data ratio)."
    )
    target_update_interval: int = Field(10_000, ge=1, description="Gradient steps between target-network updates.")
    tau: TargetWeight = 1.0
    epsilon_start: float = Field(1.0, ge=0, le=1, description="Exploration rate at the start.")
    epsilon_end: float = Field(0.05, ge=0, le=1, description="Exploration rate after the decay.")
    exploration_fraction: float = Field(
        0.1, ge=0, le=1, description="Fraction of total_frames over which epsilon decays linearly."
    )
    replay: Replay

    check = off_policy_problems
    per_rank = off_policy_per_rank
    warm_up = property(replay_warm_up)
    update_batch = property(sampled_batch)
