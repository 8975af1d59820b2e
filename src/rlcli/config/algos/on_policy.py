"""Config models of the on-policy algorithms, which learn from the rollout just collected: PPO, A2C,
REINFORCE and TRPO."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, Field

from rlcli.config.algos.capabilities import POLICY_HEAD, Capabilities, Masks, SpaceName
from rlcli.config.fields import (
    Discount,
    ReturnLambda,
    SDESampleFreq,
    Split,
    UseSDE,
    ValueTarget,
    no_problems,
    no_warm_up,
    unsplit,
    whole_rollout,
    whole_sequences,
)
from rlcli.config.model import SECTION

# Fields of the policy-gradient losses, defined once: the default stays at each use.
EntropyCoef = Annotated[float, Field(ge=0, description="Weight of the entropy bonus.")]
ValueCoef = Annotated[float, Field(ge=0, description="Weight of the value loss.")]


def policy_gradient(title: str, paper: str, *, memory: bool) -> Capabilities:
    """The capabilities the policy-gradient algorithms share, with their names: every action space, masks
    applied in the policy head, sampling from their action distribution, and a memory core where ``memory``."""
    actions: tuple[SpaceName, ...] = ("Discrete", "MultiDiscrete", "MultiBinary", "Box")
    return Capabilities(
        title=title,
        paper=paper,
        actions=actions,
        masks=Masks(("Discrete", "MultiDiscrete"), POLICY_HEAD),
        memory=memory,
        samples="(their action distribution)",
    )


class PPOConfig(BaseModel):
    CAPABILITIES: ClassVar[Capabilities] = policy_gradient(
        "PPO", "[Schulman et al., 2017](https://arxiv.org/abs/1707.06347)", memory=True
    )

    # Defaults follow Stable-Baselines3's PPO defaults (the values of the paper's
    # MuJoCo runs); presets override them with RL-Zoo's tuned values.
    model_config = SECTION

    name: Literal["ppo"] = Field(description="Proximal Policy Optimization.")
    gamma: Discount = 0.99
    return_lambda: ReturnLambda = 0.95
    clip_epsilon: float = Field(0.2, gt=0, le=1, description="Clip range of the probability ratio.")
    clip_schedule: Literal["constant", "linear"] = Field("constant", description="Decay of clip_epsilon over the run.")
    clip_value: float | None = Field(
        None, gt=0, description="Clip the value update to this distance from the old value (off when unset)."
    )
    entropy_coef: EntropyCoef = 0.0
    value_coef: ValueCoef = 0.5
    epochs: int = Field(10, ge=1, le=1000, description="Passes over each batch.")
    minibatch_size: int = Field(64, ge=2, description="Samples per gradient step.")
    normalize_advantage: bool = Field(True, description="Normalize advantages per minibatch.")
    target_kl: float | None = Field(
        None, gt=0, description="Stop the epochs of an update once the approximate KL exceeds this."
    )
    value_target: ValueTarget = "gae"
    sequence_length: int | None = Field(
        None,
        ge=1,
        description="With [network] memory: the steps of each env's sequence a minibatch holds, re-run from "
        "the memory stored at its first step (default: the rollout's steps per env, or minibatch_size if "
        "smaller); it must divide both.",
    )
    use_sde: UseSDE = False
    sde_sample_freq: SDESampleFreq = -1

    def sequence(self, steps: int) -> int:
        """Steps per sequence of a recurrent update, of rollouts of ``steps`` steps per env."""
        return self.sequence_length if self.sequence_length is not None else min(steps, self.minibatch_size)

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

    warm_up = property(no_warm_up)

    @property
    def update_batch(self) -> int:
        """PPO's gradient step takes one minibatch."""
        return self.minibatch_size


class A2CConfig(BaseModel):
    CAPABILITIES: ClassVar[Capabilities] = policy_gradient(
        "A2C", "[Mnih et al., 2016](https://arxiv.org/abs/1602.01783)", memory=True
    )

    # Defaults follow Stable-Baselines3's A2C defaults (5-step returns, RMSprop in the preset).
    model_config = SECTION

    name: Literal["a2c"] = Field(description="Advantage Actor-Critic.")
    gamma: Discount = 0.99
    return_lambda: ReturnLambda = 1.0
    entropy_coef: EntropyCoef = 0.0
    value_coef: ValueCoef = 0.5
    normalize_advantage: bool = Field(False, description="Normalize advantages over the batch.")
    value_target: ValueTarget = "gae"
    use_sde: UseSDE = False
    sde_sample_freq: SDESampleFreq = -1

    check = no_problems
    per_rank = unsplit
    warm_up = property(no_warm_up)
    update_batch = property(whole_rollout)
    sequence = whole_sequences


class REINFORCEConfig(BaseModel):
    CAPABILITIES: ClassVar[Capabilities] = policy_gradient(
        "REINFORCE", "[Williams, 1992](https://doi.org/10.1007/BF00992696)", memory=True
    )

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
    return_lambda: ReturnLambda = 1.0
    entropy_coef: EntropyCoef = 0.0
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

    per_rank = unsplit
    warm_up = property(no_warm_up)
    update_batch = property(whole_rollout)
    sequence = whole_sequences


class TRPOConfig(BaseModel):
    CAPABILITIES: ClassVar[Capabilities] = policy_gradient(
        "TRPO", "[Schulman et al., 2015](https://arxiv.org/abs/1502.05477)", memory=False
    )

    # Defaults follow sb3-contrib's TRPO defaults (Schulman et al., 2015, with GAE): KL bound 0.01, 15
    # conjugate-gradient iterations damped by 0.1, a line search of 10 steps shrinking by 0.8, and 10 passes
    # of 128-sample minibatches for the value function (its lr 1e-3 in [optim]); presets override them with
    # RL-Zoo's tuned values (hyperparams/trpo.yml).
    model_config = SECTION

    name: Literal["trpo"] = Field(
        description="Trust Region Policy Optimization (Schulman et al., 2015): a natural-gradient policy step by "
        "conjugate gradients, found by a line search within a KL bound; the value function by regression."
    )
    gamma: Discount = 0.99
    return_lambda: ReturnLambda = 0.95
    value_target: ValueTarget = "gae"
    normalize_advantage: bool = Field(True, description="Normalize advantages over the rollout.")
    max_kl: float = Field(
        0.01,
        gt=0,
        le=10,
        description="Trust region: the largest mean KL(old || new) of the policy over the rollout that a step "
        "may take (sb3-contrib's target_kl).",
    )
    cg_iterations: int = Field(
        15, ge=1, le=1000, description="Conjugate-gradient iterations that solve for the natural gradient."
    )
    cg_damping: float = Field(
        0.1, ge=0, le=100, description="Added to the Fisher matrix's diagonal (times the identity) for the solve."
    )
    backtracks: int = Field(
        10, ge=1, le=100, description="Line-search tries, each shrinking the step, before the update is dropped."
    )
    backtrack_ratio: float = Field(0.8, gt=0, lt=1, description="What each line-search try shrinks the step by.")
    value_epochs: int = Field(10, ge=1, le=1000, description="Passes of value-function steps over each rollout.")
    value_minibatch_size: int = Field(
        128, ge=1, description="Samples per value-function step (a larger one than the rollout takes it whole)."
    )
    use_sde: UseSDE = False
    sde_sample_freq: SDESampleFreq = -1

    check = no_problems
    per_rank = unsplit
    warm_up = property(no_warm_up)
    update_batch = property(whole_rollout)
