"""Config models of the value-based algorithms, which act by an argmax over learned action values
(epsilon-greedy while collecting) and learn from replay: DQN (double DQN a field) and QR-DQN."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, Field

from rlcli.config.algos.capabilities import Q_ARGMAX, Capabilities, Masks
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

# The fields of the epsilon-greedy, target-network Q-learners, defined once (defaults stay at each use).
DoubleQ = Annotated[
    bool, Field(description="Double DQN: the online network picks the next action, the target network values it.")
]
UpdateToData = Annotated[
    float, Field(gt=0, le=1024, description="Gradient steps per collected frame (update-to-data ratio).")
]
TargetInterval = Annotated[int, Field(ge=1, description="Gradient steps between target-network updates.")]
EpsilonStart = Annotated[float, Field(ge=0, le=1, description="Exploration rate at the start.")]
EpsilonEnd = Annotated[float, Field(ge=0, le=1, description="Exploration rate after the decay.")]
ExplorationFraction = Annotated[
    float, Field(ge=0, le=1, description="Fraction of total_frames over which epsilon decays linearly.")
]


class DQNConfig(BaseModel):
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        title="DQN",
        paper="[Mnih et al., 2015](https://doi.org/10.1038/nature14236); "
        "[van Hasselt et al., 2016](https://arxiv.org/abs/1509.06461); "
        "[Schaul et al., 2016](https://arxiv.org/abs/1511.05952)",
        actions=("Discrete",),
        masks=Masks(("Discrete",), Q_ARGMAX),
        samples="with epsilon_end > 0",
        fields_note="double DQN, n-step and prioritized replay: fields",
    )

    # Defaults follow Stable-Baselines3's DQN defaults (lr and max_grad_norm live in [optim]);
    # presets override them with RL-Zoo's tuned values.
    model_config = SECTION

    name: Literal["dqn"] = Field(description="Deep Q-Network, for discrete actions.")
    gamma: Discount = 0.99
    double: DoubleQ = True
    loss: Literal["huber", "mse"] = Field("huber", description="TD loss: huber (smooth L1) or mse.")
    n_step: NStep = 1
    batch_size: BatchSize = 32
    learning_starts: LearningStarts = 100
    utd_ratio: UpdateToData = 0.25
    target_update_interval: TargetInterval = 10_000
    tau: TargetWeight = 1.0
    epsilon_start: EpsilonStart = 1.0
    epsilon_end: EpsilonEnd = 0.05
    exploration_fraction: ExplorationFraction = 0.1
    replay: Replay

    check = off_policy_problems
    per_rank = off_policy_per_rank
    warm_up = property(replay_warm_up)
    update_batch = property(sampled_batch)


class QRDQNConfig(BaseModel):
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        title="QR-DQN",
        paper="[Dabney et al., 2018](https://arxiv.org/abs/1710.10044)",
        actions=("Discrete",),
        masks=Masks(("Discrete",), Q_ARGMAX),
        samples="with epsilon_end > 0",
        fields_note="double Q, n-step and prioritized replay: fields",
    )

    # Defaults follow sb3-contrib's QR-DQN defaults (200 quantiles, no double Q-learning, epsilon 1 -> 0.01
    # over 0.5% of the run; lr 5e-5 and no gradient clipping in [optim]); presets override them with
    # RL-Zoo's tuned values (hyperparams/qrdqn.yml).
    model_config = SECTION

    name: Literal["qrdqn"] = Field(
        description="Quantile-regression DQN (Dabney et al., 2018), for discrete actions: each action's return "
        "distribution as quantiles, regressed with the quantile Huber loss (kappa 1); the greedy action maximises "
        "their mean."
    )
    quantiles: int = Field(200, ge=1, le=10_000, description="Quantiles of each action's return distribution.")
    gamma: Discount = 0.99
    double: DoubleQ = False
    n_step: NStep = 1
    batch_size: BatchSize = 32
    learning_starts: LearningStarts = 100
    utd_ratio: UpdateToData = 0.25
    target_update_interval: TargetInterval = 10_000
    tau: TargetWeight = 1.0
    epsilon_start: EpsilonStart = 1.0
    epsilon_end: EpsilonEnd = 0.01
    exploration_fraction: ExplorationFraction = 0.005
    replay: Replay

    check = off_policy_problems
    per_rank = off_policy_per_rank
    warm_up = property(replay_warm_up)
    update_batch = property(sampled_batch)
