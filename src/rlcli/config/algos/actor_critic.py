"""Config models of the off-policy actor-critics for Box actions, which learn from replay: SAC (REDQ a
critic ensemble), TQC, CrossQ, TD3 (TD3+BC a weight, learning from a dataset too) and DDPG."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, Field, model_validator

from rlcli.config.algos.capabilities import Capabilities, Variant
from rlcli.config.fields import (
    BatchSize,
    Discount,
    ExplorationNoise,
    LearningStarts,
    NoiseScale,
    NStep,
    OUTheta,
    Replay,
    SDESampleFreq,
    TargetWeight,
    UseSDE,
    off_policy_per_rank,
    off_policy_problems,
    replay_warm_up,
    sampled_batch,
)
from rlcli.config.model import SECTION, cross_field_error

# SAC's fields that TQC and CrossQ take as they are, defined once: the default stays at each use.
CriticTargetWeight = Annotated[
    float, Field(gt=0, le=1, description="Target-critic update weight: 1 copies, below 1 averages.")
]
CriticTargetInterval = Annotated[int, Field(ge=1, description="Gradient steps between target-critic updates.")]
CriticUpdateToData = Annotated[float, Field(gt=0, le=1024, description="Critic gradient steps per collected frame.")]
PolicyDelay = Annotated[int, Field(ge=1, description="Critic updates per actor and temperature update.")]
Temperature = Annotated[float, Field(gt=0, le=1000, description="Entropy temperature: its start value when tuned.")]
AutotuneTemperature = Annotated[bool, Field(description="Tune the temperature to reach target_entropy.")]
TargetEntropy = Annotated[
    float | None, Field(ge=-1000, le=1000, description="Entropy the temperature aims for (default: -dim(A)).")
]
ExplorationHold = Annotated[
    int,
    Field(
        ge=1,
        le=100_000,
        description=(
            "Collection steps for which each env keeps its standard-normal draw: 1 draws afresh every step (SAC); above "
            "1 the noise is held, a temporally correlated exploration like gSDE's sde_sample_freq, for sparse rewards."
        ),
    ),
]


def held_noise_problems(cfg) -> list[tuple[str, str]]:
    """gSDE and ``exploration_hold`` are two ways of holding the noise: a config takes one."""
    if cfg.use_sde and cfg.exploration_hold > 1:
        return [
            (
                "algo.exploration_hold",
                f"exploration_hold ({cfg.exploration_hold}) holds the noise of the squashed Gaussian, which use_sde "
                "replaces with gSDE's noise matrix (held for sde_sample_freq steps): set exploration_hold = 1, or "
                "use_sde = false",
            )
        ]
    return []


class SACConfig(BaseModel):
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        title="SAC",
        paper="[Haarnoja et al., 2018](https://arxiv.org/abs/1801.01290)",
        actions=("Box",),
        samples="(their Gaussian)",
        variants=(
            Variant(
                "REDQ (SAC with a critic ensemble)",
                "num_critics",
                "[Chen et al., 2021](https://arxiv.org/abs/2101.05982)",
            ),
        ),
    )

    # Defaults follow Stable-Baselines3's SAC defaults (learning rates live in [optim]);
    # presets override them with RL-Zoo's tuned values.
    model_config = SECTION

    name: Literal["sac"] = Field(description="Soft Actor-Critic, for Box actions (REDQ with a critic ensemble).")
    gamma: Discount = 0.99
    tau: CriticTargetWeight = 0.005
    target_update_interval: CriticTargetInterval = 1
    n_step: NStep = 1
    batch_size: BatchSize = 256
    learning_starts: LearningStarts = 100
    utd_ratio: CriticUpdateToData = 1.0
    num_critics: int = Field(2, ge=1, le=64, description="Critics in the ensemble (2: SAC's twin critics).")
    critic_subset: int = Field(
        2, ge=1, le=64, description="Critics drawn at random for each target's minimum (REDQ's M)."
    )
    actor_q: Literal["min", "mean"] = Field(
        "min", description='The actor maximises the "min" (SAC) or the "mean" (REDQ) over the critics.'
    )
    policy_delay: PolicyDelay = 1
    alpha: Temperature = 1.0
    autotune_alpha: AutotuneTemperature = True
    target_entropy: TargetEntropy = None
    exploration_hold: ExplorationHold = 1
    use_sde: UseSDE = False
    sde_sample_freq: SDESampleFreq = -1
    replay: Replay

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others, as (dotted field, message) pairs."""
        problems = []
        if self.critic_subset > self.num_critics:
            problems.append(
                (
                    "algo.critic_subset",
                    f"critic_subset ({self.critic_subset}) must not exceed num_critics ({self.num_critics})",
                )
            )
        problems += off_policy_problems(self, collector=collector, env=env)
        problems += held_noise_problems(self)
        return problems

    per_rank = off_policy_per_rank
    warm_up = property(replay_warm_up)
    update_batch = property(sampled_batch)


class TD3Config(BaseModel):
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        title="TD3",
        paper="[Fujimoto et al., 2018](https://arxiv.org/abs/1802.09477)",
        actions=("Box",),
        samples="with noise_scale > 0",
        # A dataset too: TD3+BC (bc_alpha) is TD3 learning from one.
        sources=("collector", "dataset"),
        variants=(
            Variant(
                "TD3+BC (TD3 with `bc_alpha`)",
                "bc_alpha",
                "[Fujimoto & Gu, 2021](https://arxiv.org/abs/2106.06860)",
                sources=("dataset",),
            ),
        ),
    )

    # Defaults follow Stable-Baselines3's TD3 defaults (learning rates live in [optim]),
    # which are the paper's; presets override them with RL-Zoo's tuned values.
    model_config = SECTION

    name: Literal["td3"] = Field(
        description="Twin Delayed DDPG, for Box actions. Its critic loss is 0.5 * sum over critics of the mean squared TD error, as Stable-Baselines3's SAC; the paper's and SB3's TD3 have no 0.5: the same Adam steps, but half the gradient norm that optim.max_grad_norm clips."
    )
    gamma: Discount = 0.99
    tau: TargetWeight = 0.005
    n_step: NStep = 1
    batch_size: BatchSize = 256
    learning_starts: LearningStarts = 100
    utd_ratio: CriticUpdateToData = 1.0
    num_critics: int = Field(2, ge=1, le=64, description="Critics whose minimum is the target (2: clipped double Q).")
    policy_delay: int = Field(2, ge=1, description="Critic updates per actor and target update.")
    target_noise: float = Field(
        0.2, ge=0, le=10, description="Std of the target-policy smoothing noise (fraction of the action half-range)."
    )
    target_noise_clip: float = Field(0.5, ge=0, le=10, description="Clip of the smoothing noise (same units).")
    noise: ExplorationNoise = "gaussian"
    noise_scale: NoiseScale = 0.1
    ou_theta: OUTheta = 0.15
    bc_alpha: float | None = Field(
        None,
        gt=0,
        le=1000,
        description="TD3+BC (Fujimoto & Gu, 2021; 2.5 there): the actor minimises "
        "-bc_alpha * Q / mean|Q| plus the squared distance to the batch's actions; unset: plain TD3.",
    )
    replay: Replay

    check = off_policy_problems
    per_rank = off_policy_per_rank
    warm_up = property(replay_warm_up)
    update_batch = property(sampled_batch)


class DDPGConfig(BaseModel):
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        title="DDPG",
        paper="[Lillicrap et al., 2016](https://arxiv.org/abs/1509.02971)",
        actions=("Box",),
        samples="with noise_scale > 0",
    )

    # Defaults follow Stable-Baselines3's DDPG defaults (learning rates live in [optim]);
    # presets override them with RL-Zoo's tuned values.
    model_config = SECTION

    name: Literal["ddpg"] = Field(
        description="Deep Deterministic Policy Gradient, for Box actions. Its critic loss is 0.5 * sum over critics of the mean squared TD error, as Stable-Baselines3's SAC; the paper's and SB3's DDPG have no 0.5: the same Adam steps, but half the gradient norm that optim.max_grad_norm clips."
    )
    gamma: Discount = 0.99
    tau: TargetWeight = 0.005
    n_step: NStep = 1
    batch_size: BatchSize = 256
    learning_starts: LearningStarts = 100
    utd_ratio: float = Field(1.0, gt=0, le=1024, description="Gradient steps per collected frame.")
    noise: ExplorationNoise = "gaussian"
    noise_scale: NoiseScale = 0.1
    ou_theta: OUTheta = 0.15
    replay: Replay

    check = off_policy_problems
    per_rank = off_policy_per_rank
    warm_up = property(replay_warm_up)
    update_batch = property(sampled_batch)


class TQCConfig(BaseModel):
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        title="TQC",
        paper="[Kuznetsov et al., 2020](https://arxiv.org/abs/2005.04269)",
        actions=("Box",),
        samples="(their Gaussian)",
    )

    # Defaults follow sb3-contrib's TQC defaults (Kuznetsov et al., 2020): 2 critics of 25 quantiles, the
    # top 2 of each dropped from the pooled target, SAC's temperature; lr 3e-4 in [optim]. Presets
    # override them with RL-Zoo's tuned values (hyperparams/tqc.yml).
    model_config = SECTION

    name: Literal["tqc"] = Field(
        description="Truncated Quantile Critics (Kuznetsov et al., 2020), for Box actions: SAC's actor and "
        "temperature with an ensemble of quantile critics; the target pools every critic's quantiles of the next "
        "state and drops the largest."
    )
    gamma: Discount = 0.99
    tau: CriticTargetWeight = 0.005
    target_update_interval: CriticTargetInterval = 1
    n_step: NStep = 1
    batch_size: BatchSize = 256
    learning_starts: LearningStarts = 100
    utd_ratio: CriticUpdateToData = 1.0
    num_critics: int = Field(2, ge=1, le=64, description="Quantile critics in the ensemble.")
    quantiles: int = Field(25, ge=1, le=1000, description="Quantiles each critic estimates.")
    top_quantiles_to_drop_per_net: int = Field(
        2,
        ge=0,
        description="Largest quantiles dropped from the pooled target, per critic: the target keeps "
        "num_critics * (quantiles - top_quantiles_to_drop_per_net) of them.",
    )
    policy_delay: PolicyDelay = 1
    alpha: Temperature = 1.0
    autotune_alpha: AutotuneTemperature = True
    target_entropy: TargetEntropy = None
    exploration_hold: ExplorationHold = 1
    use_sde: UseSDE = False
    sde_sample_freq: SDESampleFreq = -1
    replay: Replay

    @property
    def kept_quantiles(self) -> int:
        """Quantiles the pooled target keeps."""
        return self.num_critics * (self.quantiles - self.top_quantiles_to_drop_per_net)

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others, as (dotted field, message) pairs."""
        problems = []
        if self.top_quantiles_to_drop_per_net >= self.quantiles:
            problems.append(
                (
                    "algo.top_quantiles_to_drop_per_net",
                    f"top_quantiles_to_drop_per_net ({self.top_quantiles_to_drop_per_net}) drops "
                    f"{self.top_quantiles_to_drop_per_net * self.num_critics} of the {self.num_critics} x "
                    f"{self.quantiles} pooled quantiles, leaving the target none; the largest allowed is "
                    f"{self.quantiles - 1} (quantiles - 1)",
                )
            )
        problems += off_policy_problems(self, collector=collector, env=env)
        problems += held_noise_problems(self)
        return problems

    per_rank = off_policy_per_rank
    warm_up = property(replay_warm_up)
    update_batch = property(sampled_batch)


# What CrossQ lacks, and a config may still name from SAC or TQC: each key with what to do instead.
_NO_TARGET = {
    "tau": "it has no target network to average into (its critics bootstrap from themselves, through batch "
    "renormalization); remove tau",
    "target_update_interval": "it has no target network to update; remove target_update_interval",
    "target": "it has no target network; remove target",
}


class CrossQConfig(BaseModel):
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        title="CrossQ",
        paper="[Bhatt et al., 2024](https://arxiv.org/abs/1902.05605)",
        actions=("Box",),
        samples="(their Gaussian)",
    )

    # Defaults follow sb3-contrib's CrossQ defaults (Bhatt et al., 2024): 2 critics, an actor step every 3
    # critic steps, batch renormalization (momentum 0.01, eps 0.001, 100k warm-up steps) in critics and actor,
    # SAC's tuned temperature; lr 1e-3 and Adam betas (0.5, 0.999) in [optim], 256x256 actor and 1024x1024
    # critics in [network]. Presets override them with RL-Zoo's values (hyperparams/crossq.yml).
    model_config = SECTION

    name: Literal["crossq"] = Field(
        description="CrossQ (Bhatt et al., 2024), for Box actions: SAC without target networks; batch-renormalized "
        "critics evaluate (s, a) and (s', a') in one joint forward pass, whose batch statistics cover both."
    )
    gamma: Discount = 0.99
    n_step: NStep = 1
    batch_size: BatchSize = 256
    learning_starts: LearningStarts = 100
    utd_ratio: CriticUpdateToData = 1.0
    num_critics: int = Field(2, ge=1, le=64, description="Critics whose minimum is the target and the actor's value.")
    policy_delay: PolicyDelay = 3
    alpha: Temperature = 1.0
    autotune_alpha: AutotuneTemperature = True
    target_entropy: TargetEntropy = None
    batch_norm_momentum: float = Field(
        0.01, gt=0, le=1, description="Weight of each batch in the running statistics of batch renormalization."
    )
    batch_norm_eps: float = Field(0.001, gt=0, le=1, description="Added to the variance before its square root.")
    renorm_warmup_steps: int = Field(
        100_000,
        ge=0,
        description="Learning forward passes of a layer that normalize by the batch alone, before the "
        "renormalization toward the running statistics begins.",
    )
    replay: Replay

    @model_validator(mode="before")
    @classmethod
    def _no_target_network(cls, data: Any) -> Any:
        """A key of SAC's target network refused with the reason, not the bare "extra input" message."""
        if isinstance(data, dict):
            problems = [
                (f"algo.{key}", f"crossq takes no {key}: {why}") for key, why in _NO_TARGET.items() if key in data
            ]
            if problems:
                raise cross_field_error(problems)
        return data

    check = off_policy_problems
    per_rank = off_policy_per_rank
    warm_up = property(replay_warm_up)
    update_batch = property(sampled_batch)
