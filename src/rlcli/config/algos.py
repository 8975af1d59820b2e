"""The algorithms' config models: one pydantic model per algorithm, the ``[algo.replay]``
table the off-policy ones share, and the ``AlgoConfig`` union over them.

They live apart from the algorithms themselves so that reading and checking a config
(``rlcli validate``, ``show-config``, ``schema``) never imports torch. Each algorithm module
names its model as ``CONFIG``; ``ALGO_CONFIGS`` is the one list of algorithms: the union and
the error messages read it, and ``rlcli.algos.ALGORITHMS`` is derived from it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field

from rlcli.config.model import SECTION


class ReplayConfig(BaseModel):
    # Defaults follow Stable-Baselines3's (1M transitions) and Schaul et al. (2016) for the
    # proportional variant (alpha 0.6, beta 0.4 annealed to 1).
    model_config = SECTION

    capacity: int = Field(1_000_000, ge=1, le=2**31 - 1, description="Transitions kept; the oldest are overwritten.")
    storage: Literal["tensor", "memmap"] = Field(
        "tensor",
        description='"tensor": preallocated in memory; "memmap": memory-mapped files on disk, '
        "for buffers larger than RAM.",
    )
    device: Literal["cpu", "auto"] = Field(
        "cpu", description='Where "tensor" storage lives: "cpu", or "auto" for the training device.'
    )
    directory: str | None = Field(
        None, min_length=1, description='Folder of "memmap" files (default: replay/ in the run folder).'
    )
    prioritized: bool = Field(False, description="Proportional prioritized replay (Schaul et al., 2016).")
    frames: Literal["auto", "off"] = Field(
        "auto", description='"auto": an Atari frame stack (an ALE/ env, n_step = 1) stores each frame once and '
        'rebuilds the stacks when sampled (a seventh of the memory); "off": whole observations.'
    )
    alpha: float = Field(0.6, ge=0, le=1, description="Priority exponent: 0 samples uniformly.")
    beta: float = Field(0.4, ge=0, le=1, description="Initial importance-sampling exponent.")
    beta_frames: int = Field(100_000, ge=1, description="Frames over which beta anneals linearly to 1.")
    priority_eps: float = Field(1e-6, gt=0, le=1, description="Added to |TD error| so no priority is 0.")


# Fields several algorithms share, defined once: the default stays at each use.
Discount = Annotated[float, Field(ge=0, le=1, description="Discount factor.")]
NStep = Annotated[int, Field(ge=1, le=100, description="Steps of reward summed before bootstrapping.")]
BatchSize = Annotated[int, Field(ge=1, le=1_000_000, description="Transitions per gradient step.")]
LearningStarts = Annotated[
    int, Field(ge=0, description="Frames of uniformly random actions before the first gradient step.")
]
Replay = Annotated[ReplayConfig, Field(default_factory=ReplayConfig, description="The replay buffer.")]
TargetWeight = Annotated[float, Field(gt=0, le=1, description="Target update weight: 1 copies, below 1 averages.")]
ExplorationNoise = Annotated[
    Literal["gaussian", "ou"], Field(description="Exploration noise: gaussian or ou (Ornstein-Uhlenbeck).")
]
NoiseScale = Annotated[float, Field(ge=0, le=10, description="Exploration noise std (fraction of the half-range).")]
OUTheta = Annotated[float, Field(gt=0, le=100, description="Mean reversion of the Ornstein-Uhlenbeck noise.")]


Split = tuple[dict[str, Any], list[tuple[str, str]]]
"""What one rank of a data-parallel run changes in an algorithm section, and why it cannot split."""


def off_policy_per_rank(cfg, world_size: int) -> Split:
    """One rank's share of a replay-based algorithm: its part of each gradient step's batch, of the
    warm-up, of the buffer and of prioritized replay's annealing, with ``world_size`` times the
    update-to-data ratio per local frame, so that the ranks together take the steps, of the batch
    size, that one process would."""
    problems = []
    if cfg.batch_size % world_size:
        problems.append(("algo.batch_size", f"batch_size ({cfg.batch_size}) must be a multiple of the "
                                            f"world size ({world_size}): each rank samples its share"))
    # Each rank's buffer counts its own frames: beta anneals over its share of beta_frames.
    replay = cfg.replay.model_copy(update={"capacity": -(-cfg.replay.capacity // world_size),
                                           "beta_frames": -(-cfg.replay.beta_frames // world_size)})
    return {"batch_size": cfg.batch_size // world_size, "learning_starts": -(-cfg.learning_starts // world_size),
            "utd_ratio": cfg.utd_ratio * world_size, "replay": replay}, problems


def off_policy_problems(cfg, collector) -> list[tuple[str, str]]:
    """Cross-section checks every replay-based algorithm config shares, as (dotted field, message)
    pairs: a warm-up inside the run and a batch that fits in the buffer."""
    problems = []
    if cfg.learning_starts > collector.frames:
        problems.append(("algo.learning_starts",
                         f"learning_starts ({cfg.learning_starts:,}) is larger than the run's "
                         f"{collector.frames:,} frames (collector.total_frames): the run would never learn"))
    if cfg.batch_size > cfg.replay.capacity:
        problems.append(("algo.batch_size", f"batch_size ({cfg.batch_size}) must not exceed "
                                            f"algo.replay.capacity ({cfg.replay.capacity})"))
    return problems


# The estimators of rlcli.advantages.ESTIMATORS, whose keys a test holds to these names.
ValueTarget = Annotated[
    Literal["gae", "td0", "td1", "td_lambda"],
    Field(description="Estimator of the value targets and advantages: gae, td0 (one-step), "
                      "td1 (Monte Carlo, bootstrapped at truncation and at the batch end) or "
                      "td_lambda (lambda-returns); gae and td_lambda read gae_lambda."),
]


class PPOConfig(BaseModel):
    # Defaults follow Stable-Baselines3's PPO defaults (the values of the paper's
    # MuJoCo runs); presets override them with RL-Zoo's tuned values.
    model_config = SECTION

    name: Literal["ppo"] = Field(description="Proximal Policy Optimization.")
    gamma: Discount = 0.99
    gae_lambda: float = Field(0.95, ge=0, le=1, description="GAE lambda (1: Monte Carlo, 0: TD(0)).")
    clip_epsilon: float = Field(0.2, gt=0, le=1, description="Clip range of the probability ratio.")
    clip_schedule: Literal["constant", "linear"] = Field(
        "constant", description="Decay of clip_epsilon over the run."
    )
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
            return [("algo.minibatch_size",
                     f"minibatch_size ({self.minibatch_size}) must not exceed collector.frames_per_batch ({fpb})")]
        return []

    def per_rank(self, world_size: int) -> Split:
        """Each rank takes its share of every minibatch; the averaged gradient is the whole one's."""
        problems = []
        if self.minibatch_size % world_size:
            problems.append(("algo.minibatch_size", f"minibatch_size ({self.minibatch_size}) must be a multiple "
                                                    f"of the world size ({world_size}): each rank takes its share"))
        return {"minibatch_size": self.minibatch_size // world_size}, problems


class A2CConfig(BaseModel):
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
    # Defaults follow the PyTorch examples' REINFORCE (examples/reinforcement_learning/reinforce.py:
    # gamma 0.99, standardized returns) and Spinning Up's VPG (a learned value baseline), with
    # Monte-Carlo returns (td1) where VPG uses GAE(0.97).
    model_config = SECTION

    name: Literal["reinforce"] = Field(
        description="REINFORCE (Williams, 1992): the Monte-Carlo policy gradient, with or without a learned baseline."
    )
    gamma: Discount = 0.99
    baseline: bool = Field(
        True, description="Subtract a learned value baseline (the critic, trained on the value targets); "
                          "without it the steps of episodes the batch cuts are left out of the loss."
    )
    value_target: ValueTarget = "td1"
    gae_lambda: float = Field(1.0, ge=0, le=1, description="Lambda of value_target gae or td_lambda.")
    entropy_coef: float = Field(0.0, ge=0, description="Weight of the entropy bonus.")
    value_coef: float = Field(0.5, ge=0, description="Weight of the value loss (with a baseline).")
    normalize_advantage: bool = Field(True, description="Normalize advantages (returns, without a baseline) "
                                                        "over the batch.")

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others, as (dotted field, message) pairs."""
        if not self.baseline and self.value_target != "td1":
            return [("algo.value_target", f'value_target "{self.value_target}" needs a critic; without a baseline '
                                          'the returns are Monte Carlo: set value_target = "td1" or baseline = true')]
        return []

    def per_rank(self, world_size: int) -> Split:
        """Nothing to split: each rank's step is on its share of the rollout."""
        return {}, []


class DQNConfig(BaseModel):
    # Defaults follow Stable-Baselines3's DQN defaults (lr and max_grad_norm live in [optim]);
    # presets override them with RL-Zoo's tuned values.
    model_config = SECTION

    name: Literal["dqn"] = Field(description="Deep Q-Network, for discrete actions.")
    gamma: Discount = 0.99
    double: bool = Field(True, description="Double DQN: the online network picks the next action, "
                                           "the target network values it.")
    loss: Literal["huber", "mse"] = Field("huber", description="TD loss: huber (smooth L1) or mse.")
    n_step: NStep = 1
    batch_size: BatchSize = 32
    learning_starts: LearningStarts = 100
    utd_ratio: float = Field(
        0.25, gt=0, le=1024, description="Gradient steps per collected frame (update-to-data ratio)."
    )
    target_update_interval: int = Field(
        10_000, ge=1, description="Gradient steps between target-network updates."
    )
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
    replay: Replay

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others, as (dotted field, message) pairs."""
        problems = []
        if self.critic_subset > self.num_critics:
            problems.append(("algo.critic_subset", f"critic_subset ({self.critic_subset}) must not exceed "
                                                   f"num_critics ({self.num_critics})"))
        problems += off_policy_problems(self, collector)
        return problems

    def per_rank(self, world_size: int) -> Split:
        """See :func:`off_policy_per_rank`."""
        return off_policy_per_rank(self, world_size)


class TD3Config(BaseModel):
    # Defaults follow Stable-Baselines3's TD3 defaults (learning rates live in [optim]),
    # which are the paper's; presets override them with RL-Zoo's tuned values.
    model_config = SECTION

    name: Literal["td3"] = Field(description="Twin Delayed DDPG, for Box actions.")
    gamma: Discount = 0.99
    tau: TargetWeight = 0.005
    n_step: NStep = 1
    batch_size: BatchSize = 256
    learning_starts: LearningStarts = 100
    utd_ratio: float = Field(1.0, gt=0, le=1024, description="Critic gradient steps per collected frame.")
    num_critics: int = Field(2, ge=1, le=64, description="Critics whose minimum is the target (2: clipped double Q).")
    policy_delay: int = Field(2, ge=1, description="Critic updates per actor and target update.")
    target_noise: float = Field(0.2, ge=0, le=10, description="Std of the target-policy smoothing noise "
                                                                "(fraction of the action half-range).")
    target_noise_clip: float = Field(0.5, ge=0, le=10, description="Clip of the smoothing noise (same units).")
    noise: ExplorationNoise = "gaussian"
    noise_scale: NoiseScale = 0.1
    ou_theta: OUTheta = 0.15
    replay: Replay

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others, as (dotted field, message) pairs."""
        return off_policy_problems(self, collector)

    def per_rank(self, world_size: int) -> Split:
        """See :func:`off_policy_per_rank`."""
        return off_policy_per_rank(self, world_size)


class DDPGConfig(BaseModel):
    # Defaults follow Stable-Baselines3's DDPG defaults (learning rates live in [optim]);
    # presets override them with RL-Zoo's tuned values.
    model_config = SECTION

    name: Literal["ddpg"] = Field(description="Deep Deterministic Policy Gradient, for Box actions.")
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

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between this section and others, as (dotted field, message) pairs."""
        return off_policy_problems(self, collector)

    def per_rank(self, world_size: int) -> Split:
        """See :func:`off_policy_per_rank`."""
        return off_policy_per_rank(self, world_size)


ALGO_CONFIGS: dict[str, type[BaseModel]] = {
    "ppo": PPOConfig,
    "a2c": A2CConfig,
    "dqn": DQNConfig,
    "sac": SACConfig,
    "td3": TD3Config,
    "ddpg": DDPGConfig,
    "reinforce": REINFORCEConfig,
}
"""Config model of each algorithm, by its ``name``: the one list of algorithms. ``rlcli.algos.ALGORITHMS``
takes its modules, ``rlcli.algos.<name>``, from it in this order."""

AlgoConfig = Annotated[
    Union[tuple(ALGO_CONFIGS.values())],  # noqa: UP007
    Field(discriminator="name"),
]
