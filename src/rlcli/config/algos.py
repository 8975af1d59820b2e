"""The algorithms' config models, one per algorithm (the fields and ``[algo.replay]`` table they share are
in :mod:`rlcli.config.fields`), and the ``AlgoConfig`` union over them. They live apart from the algorithms
so that reading and checking a config never imports torch. Each algorithm module names its model as
``CONFIG``; ``ALGO_CONFIGS`` is the one list of algorithms, which the union, the error messages and
``rlcli.algos.ALGORITHMS`` read."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Union

from pydantic import BaseModel, Field

from rlcli.config.fields import (
    BatchSize,
    Discount,
    ExplorationNoise,
    LearningStarts,
    NoiseScale,
    NStep,
    OUTheta,
    Replay,
    Split,
    TargetWeight,
    ValueTarget,
    off_policy_per_rank,
    off_policy_problems,
)
from rlcli.config.model import SECTION


class PPOConfig(BaseModel):
    SOURCES: ClassVar[tuple[str, ...]] = ("collector",)

    # Defaults follow Stable-Baselines3's PPO defaults (the values of the paper's
    # MuJoCo runs); presets override them with RL-Zoo's tuned values.
    model_config = SECTION

    name: Literal["ppo"] = Field(description="Proximal Policy Optimization.")
    gamma: Discount = 0.99
    gae_lambda: float = Field(0.95, ge=0, le=1, description="GAE lambda (1: Monte Carlo, 0: TD(0)).")
    clip_epsilon: float = Field(0.2, gt=0, le=1, description="Clip range of the probability ratio.")
    clip_schedule: Literal["constant", "linear"] = Field("constant", description="Decay of clip_epsilon over the run.")
    clip_value: float | None = Field(
        None, gt=0, description="Clip the value update to this distance from the old value (off when unset)."
    )
    entropy_coef: float = Field(0.0, ge=0, description="Weight of the entropy bonus.")
    value_coef: float = Field(0.5, ge=0, description="Weight of the value loss.")
    epochs: int = Field(10, ge=1, le=1000, description="Passes over each batch.")
    minibatch_size: int = Field(64, ge=2, description="Samples per gradient step.")
    normalize_advantage: bool = Field(True, description="Normalize advantages per minibatch.")
    target_kl: float | None = Field(
        None, gt=0, description="Stop the epochs of an update once the approximate KL exceeds this."
    )
    value_target: ValueTarget = "gae"

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others, as (dotted field, message) pairs."""
        fpb = collector.frames_per_batch
        if self.minibatch_size > fpb:
            return [
                (
                    "algo.minibatch_size",
                    f"minibatch_size ({self.minibatch_size}) must not exceed collector.frames_per_batch ({fpb})",
                )
            ]
        return []

    def per_rank(self, world_size: int) -> Split:
        """Each rank takes its share of every minibatch; the averaged gradient is the whole one's."""
        problems = []
        if self.minibatch_size % world_size:
            problems.append(
                (
                    "algo.minibatch_size",
                    f"minibatch_size ({self.minibatch_size}) must be a multiple "
                    f"of the world size ({world_size}): each rank takes its share",
                )
            )
        return {"minibatch_size": self.minibatch_size // world_size}, problems


class A2CConfig(BaseModel):
    SOURCES: ClassVar[tuple[str, ...]] = ("collector",)

    # Defaults follow Stable-Baselines3's A2C defaults (5-step returns, RMSprop in the preset).
    model_config = SECTION

    name: Literal["a2c"] = Field(description="Advantage Actor-Critic.")
    gamma: Discount = 0.99
    gae_lambda: float = Field(1.0, ge=0, le=1, description="GAE lambda; 1 gives n-step returns.")
    entropy_coef: float = Field(0.0, ge=0, description="Weight of the entropy bonus.")
    value_coef: float = Field(0.5, ge=0, description="Weight of the value loss.")
    normalize_advantage: bool = Field(False, description="Normalize advantages over the batch.")
    value_target: ValueTarget = "gae"

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others, as (dotted field, message) pairs: none for A2C."""
        return []

    def per_rank(self, world_size: int) -> Split:
        """Nothing to split: each rank's step is on its share of the rollout."""
        return {}, []


class REINFORCEConfig(BaseModel):
    SOURCES: ClassVar[tuple[str, ...]] = ("collector",)

    # Defaults follow the PyTorch examples' REINFORCE (examples/reinforcement_learning/reinforce.py:
    # gamma 0.99, standardized returns) and Spinning Up's VPG (a learned value baseline), with
    # Monte-Carlo returns (td1) where VPG uses GAE(0.97).
    model_config = SECTION

    name: Literal["reinforce"] = Field(
        description="REINFORCE (Williams, 1992): the Monte-Carlo policy gradient, with or without a learned baseline."
    )
    gamma: Discount = 0.99
    baseline: bool = Field(
        True,
        description="Subtract a learned value baseline (the critic, trained on the value targets); "
        "without it the steps of episodes the batch cuts are left out of the loss.",
    )
    value_target: ValueTarget = "td1"
    gae_lambda: float = Field(1.0, ge=0, le=1, description="Lambda of value_target gae or td_lambda.")
    entropy_coef: float = Field(0.0, ge=0, description="Weight of the entropy bonus.")
    value_coef: float = Field(0.5, ge=0, description="Weight of the value loss (with a baseline).")
    normalize_advantage: bool = Field(
        True, description="Normalize advantages (returns, without a baseline) over the batch."
    )

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others, as (dotted field, message) pairs."""
        if not self.baseline and self.value_target != "td1":
            return [
                (
                    "algo.value_target",
                    f'value_target "{self.value_target}" needs a critic; without a baseline '
                    'the returns are Monte Carlo: set value_target = "td1" or baseline = true',
                )
            ]
        return []

    def per_rank(self, world_size: int) -> Split:
        """Nothing to split: each rank's step is on its share of the rollout."""
        return {}, []


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

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others, as (dotted field, message) pairs."""
        return off_policy_problems(self, collector)

    def per_rank(self, world_size: int) -> Split:
        """See :func:`off_policy_per_rank`."""
        return off_policy_per_rank(self, world_size)


class SACConfig(BaseModel):
    SOURCES: ClassVar[tuple[str, ...]] = ("collector",)

    # Defaults follow Stable-Baselines3's SAC defaults (learning rates live in [optim]);
    # presets override them with RL-Zoo's tuned values.
    model_config = SECTION

    name: Literal["sac"] = Field(description="Soft Actor-Critic, for Box actions (REDQ with a critic ensemble).")
    gamma: Discount = 0.99
    tau: float = Field(0.005, gt=0, le=1, description="Target-critic update weight: 1 copies, below 1 averages.")
    target_update_interval: int = Field(1, ge=1, description="Gradient steps between target-critic updates.")
    n_step: NStep = 1
    batch_size: BatchSize = 256
    learning_starts: LearningStarts = 100
    utd_ratio: float = Field(1.0, gt=0, le=1024, description="Critic gradient steps per collected frame.")
    num_critics: int = Field(2, ge=1, le=64, description="Critics in the ensemble (2: SAC's twin critics).")
    critic_subset: int = Field(
        2, ge=1, le=64, description="Critics drawn at random for each target's minimum (REDQ's M)."
    )
    actor_q: Literal["min", "mean"] = Field(
        "min", description='The actor maximises the "min" (SAC) or the "mean" (REDQ) over the critics.'
    )
    policy_delay: int = Field(1, ge=1, description="Critic updates per actor and temperature update.")
    alpha: float = Field(1.0, gt=0, le=1000, description="Entropy temperature: its start value when tuned.")
    autotune_alpha: bool = Field(True, description="Tune the temperature to reach target_entropy.")
    target_entropy: float | None = Field(
        None, ge=-1000, le=1000, description="Entropy the temperature aims for (default: -dim(A))."
    )
    exploration_hold: int = Field(
        1,
        ge=1,
        le=100_000,
        description=(
            "Collection steps for which each env keeps its standard-normal draw: 1 draws afresh every step (SAC); above "
            "1 the noise is held, a temporally correlated exploration like gSDE's sde_sample_freq, for sparse rewards."
        ),
    )
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
        problems += off_policy_problems(self, collector)
        return problems

    def per_rank(self, world_size: int) -> Split:
        """See :func:`off_policy_per_rank`."""
        return off_policy_per_rank(self, world_size)


class TD3Config(BaseModel):
    # A dataset too: TD3+BC (bc_alpha) is TD3 learning from one.
    SOURCES: ClassVar[tuple[str, ...]] = ("collector", "dataset")

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
    utd_ratio: float = Field(1.0, gt=0, le=1024, description="Critic gradient steps per collected frame.")
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

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others, as (dotted field, message) pairs."""
        return off_policy_problems(self, collector)

    def per_rank(self, world_size: int) -> Split:
        """See :func:`off_policy_per_rank`."""
        return off_policy_per_rank(self, world_size)


class DDPGConfig(BaseModel):
    SOURCES: ClassVar[tuple[str, ...]] = ("collector",)

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

    @property
    def bc_alpha(self) -> None:
        return None

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others, as (dotted field, message) pairs."""
        return off_policy_problems(self, collector)

    def per_rank(self, world_size: int) -> Split:
        """See :func:`off_policy_per_rank`."""
        return off_policy_per_rank(self, world_size)


class BCConfig(BaseModel):
    # Defaults follow CORL's BC (Tarasov et al., 2022: batch 256, lr 3e-4 in [optim], MSE to the dataset's
    # actions, 256x256 networks in the preset).
    SOURCES: ClassVar[tuple[str, ...]] = ("dataset",)
    model_config = SECTION

    name: Literal["bc"] = Field(description="Behaviour cloning: the policy regresses the dataset's actions.")
    policy: Literal["deterministic", "gaussian"] = Field(
        "deterministic",
        description='Box actions: "deterministic" (a tanh-bounded actor, mean squared error to '
        'the action) or "gaussian" (a Gaussian with a tanh-bounded mean, negative log-likelihood); Discrete '
        "actions always take a categorical policy (cross-entropy).",
    )
    batch_size: BatchSize = 256

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others: none (the dataset's spaces are checked at build)."""
        return []

    def per_rank(self, world_size: int) -> Split:
        return {}, []


class IQLConfig(BaseModel):
    # Defaults follow Kostrikov et al. (2021) for the MuJoCo tasks, as CORL and d3rlpy use them:
    # expectile 0.7, temperature 3, advantage weights clipped at 100, tau 0.005, batch 256.
    SOURCES: ClassVar[tuple[str, ...]] = ("dataset",)
    model_config = SECTION

    name: Literal["iql"] = Field(description="Implicit Q-Learning (Kostrikov et al., 2021), offline, Box actions.")
    gamma: Discount = 0.99
    tau: TargetWeight = 0.005
    expectile: float = Field(0.7, gt=0, lt=1, description="Expectile of the value regression (0.5: the mean).")
    beta: float = Field(3.0, gt=0, le=1000, description="Inverse temperature of the advantage weights.")
    max_weight: float = Field(100.0, gt=0, description="Clip of the advantage weights exp(beta * A).")
    num_critics: int = Field(
        2, ge=1, le=64, description="Q-functions whose minimum is the target (2: clipped double Q)."
    )
    batch_size: BatchSize = 256

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others: none (the dataset's spaces are checked at build)."""
        return []

    def per_rank(self, world_size: int) -> Split:
        return {}, []


class CQLConfig(BaseModel):
    # Defaults follow d3rlpy 2.8's CQL (itself Kumar et al. 2020's MuJoCo settings): conservative weight
    # 5, 10 sampled actions, actor lr 1e-4 beside the critic's 3e-4 in [optim], no Lagrange.
    SOURCES: ClassVar[tuple[str, ...]] = ("dataset",)
    model_config = SECTION

    name: Literal["cql"] = Field(
        description="Conservative Q-Learning, CQL(H) on SAC (Kumar et al., 2020), offline, Box actions."
    )
    gamma: Discount = 0.99
    tau: TargetWeight = 0.005
    num_critics: int = Field(2, ge=1, le=64, description="Critics in the ensemble; the minimum is the target.")
    batch_size: BatchSize = 256
    alpha: float = Field(1.0, gt=0, le=1000, description="SAC's entropy temperature: its start value when tuned.")
    autotune_alpha: bool = Field(True, description="Tune the temperature to reach -dim(A) entropy.")
    actor_lr: float | None = Field(
        1e-4, gt=0, le=1, description="Learning rate of the actor and the temperature (default: optim.lr)."
    )
    conservative_weight: float = Field(5.0, ge=0, le=1000, description="Weight of the conservative term (CQL's alpha).")
    num_random_actions: int = Field(
        10,
        ge=1,
        le=1000,
        description="Actions sampled per state for the logsumexp, from "
        "each of: uniform, the current policy, the next-state policy.",
    )
    temperature: float = Field(1.0, gt=0, le=100, description="Temperature of the logsumexp.")
    lagrange: bool = Field(
        False, description="Tune the conservative weight to keep the gap at target_action_gap (CQL's Lagrange version)."
    )
    target_action_gap: float = Field(10.0, ge=0, le=1000, description="With lagrange: the gap the weight aims for.")
    backup_entropy: bool = Field(
        False, description="Subtract the entropy term in the critic's target (SAC's); CORL's CQL leaves it out."
    )

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others: none (the dataset's spaces are checked at build)."""
        return []

    def per_rank(self, world_size: int) -> Split:
        return {}, []


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
}
"""Config model of each algorithm, by its ``name``: the one list of algorithms. ``rlcli.algos.ALGORITHMS``
takes its modules, ``rlcli.algos.<name>``, from it in this order."""

AlgoConfig = Annotated[
    Union[tuple(ALGO_CONFIGS.values())],  # noqa: UP007
    Field(discriminator="name"),
]
