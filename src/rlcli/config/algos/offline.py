"""Config models of the algorithms that learn only from a dataset: BC, IQL and CQL (TD3+BC is
:class:`~rlcli.config.algos.actor_critic.TD3Config` with ``bc_alpha``)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from rlcli.config.algos.capabilities import Capabilities
from rlcli.config.fields import BatchSize, Discount, TargetWeight, no_problems, no_warm_up, sampled_batch, unsplit
from rlcli.config.model import SECTION


class BCConfig(BaseModel):
    # Defaults follow CORL's BC (Tarasov et al., 2022: batch 256, lr 3e-4 in [optim], MSE to the dataset's
    # actions, 256x256 networks in the preset).
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        title="BC",
        paper="behaviour cloning, as CORL's ([Tarasov et al., 2022](https://arxiv.org/abs/2210.07105))",
        actions=("Discrete", "Box"),
        sources=("dataset",),
        samples='with policy = "gaussian" or Discrete actions',
    )
    model_config = SECTION

    name: Literal["bc"] = Field(description="Behaviour cloning: the policy regresses the dataset's actions.")
    policy: Literal["deterministic", "gaussian"] = Field(
        "deterministic",
        description='Box actions: "deterministic" (a tanh-bounded actor, mean squared error to '
        'the action) or "gaussian" (a Gaussian with a tanh-bounded mean, negative log-likelihood); Discrete '
        "actions always take a categorical policy (cross-entropy).",
    )
    batch_size: BatchSize = 256

    check = no_problems
    per_rank = unsplit
    warm_up = property(no_warm_up)
    update_batch = property(sampled_batch)


class IQLConfig(BaseModel):
    # Defaults follow Kostrikov et al. (2021) for the MuJoCo tasks, as CORL and d3rlpy use them:
    # expectile 0.7, temperature 3, advantage weights clipped at 100, tau 0.005, batch 256.
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        title="IQL",
        paper="[Kostrikov et al., 2021](https://arxiv.org/abs/2110.06169)",
        actions=("Box",),
        sources=("dataset",),
        samples="(their Gaussian)",
    )
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

    check = no_problems
    per_rank = unsplit
    warm_up = property(no_warm_up)
    update_batch = property(sampled_batch)


class CQLConfig(BaseModel):
    # Defaults follow d3rlpy 2.8's CQL (itself Kumar et al. 2020's MuJoCo settings): conservative weight
    # 5, 10 sampled actions, actor lr 1e-4 beside the critic's 3e-4 in [optim], no Lagrange.
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        title="CQL",
        paper="[Kumar et al., 2020](https://arxiv.org/abs/2006.04779)",
        actions=("Box",),
        sources=("dataset",),
        samples="(their Gaussian)",
    )
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
    actor_lr: float = Field(
        1e-4, gt=0, le=1, description="Learning rate of the actor and the temperature (the critics take optim.lr)."
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
        False,
        description="Tune a multiplier of conservative_weight (starting at 1) to keep the gap at "
        "target_action_gap (CQL's Lagrange version).",
    )
    target_action_gap: float = Field(10.0, ge=0, le=1000, description="With lagrange: the gap the weight aims for.")
    backup_entropy: bool = Field(
        False, description="Subtract the entropy term in the critic's target (SAC's); CORL's CQL leaves it out."
    )

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        """Problems between fields, as (dotted field, message) pairs: the Lagrange multiplier scales
        ``conservative_weight``, so with ``lagrange`` a weight of 0 would leave nothing to tune."""
        if self.lagrange and self.conservative_weight == 0:
            return [
                (
                    "algo.conservative_weight",
                    "conservative_weight is 0 with lagrange = true: the tuned multiplier scales this weight, "
                    "so nothing would be tuned; allowed: a weight above 0, or lagrange = false",
                )
            ]
        return []

    per_rank = unsplit
    warm_up = property(no_warm_up)
    update_batch = property(sampled_batch)
