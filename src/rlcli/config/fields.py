"""What the algorithms' config models share: the ``[algo.replay]`` table, fields defined once (each
default stays at its use), the :class:`AlgoSection` protocol every model satisfies, and the one home of
its cross-section checks and data-parallel splits that several models take as they are (a model names
them, as in ``check = no_problems``, instead of writing a method that repeats them)."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Protocol

from pydantic import AfterValidator, BaseModel, Field

from rlcli.config.model import SECTION

if TYPE_CHECKING:
    from rlcli.config.algos.capabilities import Capabilities


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
        "auto",
        description='"auto": an Atari frame stack (an ALE/ env, n_step = 1) stores each frame once and '
        'rebuilds the stacks when sampled (a seventh of the memory); "off": whole observations.',
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


def _sample_freq(value: int) -> int:
    """``sde_sample_freq`` as Stable-Baselines3 reads it: -1, or a count of steps (0 and below -1 mean nothing)."""
    if value == 0 or value < -1:
        raise ValueError(
            f"{value} is not allowed; allowed: -1 (draw the noise only at the start of each rollout) "
            "or N >= 1 (draw it every N collected steps, and at the start of each rollout)"
        )
    return value


# gSDE's fields (Stable-Baselines3's names, so that an RL-Zoo entry maps across): an algorithm whose config has
# them takes gSDE (rlcli.config.algos.WITH_GSDE is derived from that); [network] log_std_init, full_std and
# use_expln shape its noise.
UseSDE = Annotated[
    bool,
    Field(
        description="Generalized state-dependent exploration (gSDE; Raffin, Kober & Stulp, 2022; Stable-Baselines3's "
        "use_sde), for Box actions: the exploration noise is z @ E, a linear function of the policy's last hidden "
        "features z, its matrix E held between draws; the action's distribution is a Gaussian of std "
        "sqrt(z^2 @ std^2). [network] log_std_init, full_std and use_expln shape the std."
    ),
]
SDESampleFreq = Annotated[
    int,
    AfterValidator(_sample_freq),
    Field(
        json_schema_extra={"allowed": "-1, or 1 and above"},
        description="With use_sde: collected steps (per env) between draws of the noise matrix; -1 draws it only at "
        "the start of each rollout (each collection of frames_per_batch), as Stable-Baselines3's sde_sample_freq.",
    ),
]


Split = tuple[dict[str, Any], list[tuple[str, str]]]
"""What one rank of a data-parallel run changes in an algorithm section, and why it cannot split."""


class AlgoSection(Protocol):
    """What the rest of rlcli reads of an ``[algo]`` model besides its hyperparameters."""

    CAPABILITIES: ClassVar[Capabilities]
    """What its algorithm can take: spaces, masks, memory, sampling, data sources ("collector": envs,
    online; "dataset": offline)."""
    name: str

    def check(self, *, collector: Any, env: Any) -> list[tuple[str, str]]:
        """Problems between this section and the ``[collector]`` (None offline) and ``[env]`` ones, as
        (dotted field, message) pairs."""
        ...

    def per_rank(self, world_size: int) -> Split:
        """One rank's share of this section in a data-parallel run of ``world_size`` ranks: the fields
        that change, and the problems that keep it from splitting."""
        ...

    @property
    def warm_up(self) -> int:
        """Frames of uniformly random actions before the first gradient step (0: none)."""
        ...

    @property
    def update_batch(self) -> int | None:
        """Samples in one gradient step's batch; None where a step takes the whole rollout."""
        ...


def no_problems(cfg, *, collector, env) -> list[tuple[str, str]]:
    """``check`` of a section that constrains no other (an offline one's dataset spaces are checked at
    build)."""
    return []


def unsplit(cfg, world_size: int) -> Split:
    """``per_rank`` of a section with nothing to split: each rank takes its step on its share of the
    rollout, or on its own samples of the dataset."""
    return {}, []


def no_warm_up(cfg) -> int:
    """``warm_up`` of an algorithm that learns from its first batch."""
    return 0


def replay_warm_up(cfg) -> int:
    """``warm_up`` of a replay-based algorithm: its ``learning_starts``."""
    return cfg.learning_starts


def whole_rollout(cfg) -> None:
    """``update_batch`` of an algorithm whose gradient step takes the whole rollout."""
    return None


def whole_sequences(cfg, steps: int) -> int:
    """``sequence`` of an algorithm whose recurrent update re-runs each env's whole rollout of ``steps``."""
    return steps


def sampled_batch(cfg) -> int:
    """``update_batch`` of an algorithm that samples ``batch_size`` transitions per gradient step."""
    return cfg.batch_size


def off_policy_per_rank(cfg, world_size: int) -> Split:
    """One rank's share of a replay-based algorithm: its part of each gradient step's batch, of the
    warm-up, of the buffer and of prioritized replay's annealing, with ``world_size`` times the
    update-to-data ratio per local frame, so that the ranks together take the steps, of the batch
    size, that one process would."""
    problems = []
    if cfg.batch_size % world_size:
        problems.append(
            (
                "algo.batch_size",
                f"batch_size ({cfg.batch_size}) must be a multiple of the "
                f"world size ({world_size}): each rank samples its share",
            )
        )
    # Each rank's buffer counts its own frames: beta anneals over its share of beta_frames.
    replay = cfg.replay.model_copy(
        update={
            "capacity": -(-cfg.replay.capacity // world_size),
            "beta_frames": -(-cfg.replay.beta_frames // world_size),
        }
    )
    return {
        "batch_size": cfg.batch_size // world_size,
        "learning_starts": -(-cfg.learning_starts // world_size),
        "utd_ratio": cfg.utd_ratio * world_size,
        "replay": replay,
    }, problems


def off_policy_problems(cfg, *, collector, env) -> list[tuple[str, str]]:
    """Cross-section checks every replay-based algorithm config shares, as (dotted field, message)
    pairs: a warm-up inside the run and a batch that fits in the buffer (``collector`` None: an
    offline run, whose dataset is the buffer)."""
    problems: list[tuple[str, str]] = []
    if collector is None:
        return problems
    if cfg.learning_starts > collector.frames:
        problems.append(
            (
                "algo.learning_starts",
                f"learning_starts ({cfg.learning_starts:,}) is larger than the run's "
                f"{collector.frames:,} frames (collector.total_frames): the run would never learn",
            )
        )
    if cfg.batch_size > cfg.replay.capacity:
        problems.append(
            (
                "algo.batch_size",
                f"batch_size ({cfg.batch_size}) must not exceed algo.replay.capacity ({cfg.replay.capacity})",
            )
        )
    return problems


ReturnLambda = Annotated[
    float,
    Field(
        ge=0,
        le=1,
        description="Lambda of the lambda-returns that value_target gae and td_lambda compute (GAE's and TD(lambda)'s): "
        "1 gives Monte-Carlo returns (bootstrapped where the batch cuts an episode), 0 one-step TD.",
    ),
]

# The estimators of rlcli.learning.advantages.ESTIMATORS, whose keys a test holds to these names.
ValueTarget = Annotated[
    Literal["gae", "td0", "td1", "td_lambda"],
    Field(
        description="Estimator of the value targets and advantages: gae, td0 (one-step), "
        "td1 (Monte Carlo, bootstrapped at truncation and at the batch end) or "
        "td_lambda (lambda-returns); gae and td_lambda read return_lambda."
    ),
]


def plain_values(cls, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``[env] kwargs`` as given, after checking that they hold plain TOML values (a ``field_validator``):
    dates and times, which TOML has but no env takes, are refused, naming where they are."""

    def check(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                check(item, f"{path}.{key}")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                check(item, f"{path}[{index}]")
        elif isinstance(value, (datetime.date, datetime.time)):
            raise ValueError(f"{path}: dates and times are not allowed as env arguments (got {value})")

    for key, value in kwargs.items():
        check(value, key)
    return kwargs
