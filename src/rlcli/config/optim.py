"""The ``[optim]`` section: the optimizer, its schedule and gradient clipping."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from rlcli.config.model import SECTION


class OptimConfig(BaseModel):
    model_config = SECTION

    name: Literal["adam", "adamw", "sgd", "rmsprop"] = Field("adam", description="Optimizer.")
    lr: float = Field(3e-4, gt=0, le=1, description="Learning rate (at the start of the schedule).")
    eps: float = Field(1e-5, gt=0, le=1, description="Numerical epsilon of adam, adamw and rmsprop.")
    betas: list[Annotated[float, Field(ge=0, lt=1)]] = Field(
        [0.9, 0.999],
        min_length=2,
        max_length=2,
        description="Decay rates of adam's and adamw's first and second moment estimates.",
        json_schema_extra={"allowed": "two numbers, each from 0 to below 1"},
    )
    weight_decay: float = Field(0.0, ge=0, le=1, description="L2 penalty (decoupled for adamw).")
    max_grad_norm: float = Field(
        0.5, ge=0, description="Clip the global gradient norm to this value; 0 turns clipping off."
    )
    clip_scope: Literal["all", "networks"] = Field(
        "all",
        description='What max_grad_norm bounds: "all" the norm of every weight\'s gradient together '
        "(Stable-Baselines3), \"networks\" the policy's and the value's apart (TorchRL and BenchMARL, which clip "
        "each loss's optimizer apart), so that a large value gradient does not shrink the policy's step. "
        "Actor-critics of the on-policy algorithms; the others clip all.",
    )
    lr_schedule: Literal["constant", "linear", "cosine"] = Field(
        "constant", description="How the learning rate decays to 0 over total_frames."
    )
    alpha: float = Field(0.99, gt=0, lt=1, description="Smoothing constant of rmsprop.")
    momentum: float = Field(0.0, ge=0, lt=1, description="Momentum of sgd and rmsprop.")
