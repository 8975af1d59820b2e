"""The algorithm table and the protocol every algorithm satisfies.

Each entry maps a config ``name`` to its module. A module exposes ``CONFIG``
(its pydantic model), ``SUPPORTS`` (the space types it accepts), ``PHASES``
(the timed sub-phases of its ``learn``), ``METRICS`` (the row keys its
``learn`` reports) and ``build``. The config models themselves live in
``rlcli.config.algos`` (its ``ALGO_CONFIGS`` table names the same algorithms in the
same order), so that reading and checking a config never imports torch. Adding an
algorithm means its module, its config model there, one entry in each table and a
preset; ``validate --build``, the bench suites and the generic tests read this table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from rlcli.algos import a2c, ddpg, dqn, ppo, sac, td3

if TYPE_CHECKING:
    import torch
    from tensordict import TensorDict
    from torch import nn

    from rlcli.timing import Timer


class Algorithm(Protocol):
    """What the trainer, the collector and checkpoints need of an algorithm.

    The trainer loop is the same for every family: the collector calls
    ``act`` for each env step, then the trainer hands the ``[T, N]`` batch to
    ``learn``. On-policy methods compute their advantages and update there;
    off-policy methods extend their replay buffer and take their gradient steps.
    """

    agent: nn.Module
    """Every network, targets and normalization statistics included: one state_dict covers them."""

    def act(self, observation: torch.Tensor, generator: torch.Generator) -> TensorDict:
        """Actions for raw observations ([N, *obs] float32), with whatever ``learn`` needs stored
        beside them (PPO: ``log_prob``, ``value``, ``input``). Batch size [N]; no statistics change."""
        ...

    def policy(self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator) -> torch.Tensor:
        """Evaluation actions for raw observations ([N, *obs] float32), for the env as ``act`` gives them
        ([N] int64 for Discrete, [N, A] float32 in env units for Box; a Gaussian may leave the bounds,
        and the caller clips as the collector does).

        ``deterministic`` takes the policy's mode (argmax, the Gaussian's mean, the actor's output);
        otherwise actions are drawn with ``generator`` from the policy as trained, without any
        collection schedule: no warm-up, no decaying epsilon, no OU state. Changes no statistics,
        counters or generators of the algorithm; runs under ``torch.no_grad``.
        """
        ...

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Everything an iteration does with a fresh ``[T, N]`` batch; returns the row terms."""
        ...

    def state_dict(self, *, replay: bool = True) -> dict:
        """Optimizers, schedules, generators and counters (the agent's weights are saved apart);
        with ``replay``, an off-policy algorithm's stored transitions too (on-policy ones have none)."""
        ...

    def load_state_dict(self, state: dict) -> None: ...


class Benchable(Protocol):
    """The parts of an algorithm that the bench suites time and the tests probe on their own."""

    def loss(self, minibatch: TensorDict) -> dict[str, torch.Tensor]:
        """Named loss terms of one minibatch, ``loss/total`` the scalar to minimise."""
        ...

    def minibatch(self, batch: TensorDict, size: int, generator: torch.Generator) -> TensorDict:
        """A minibatch of ``size`` as ``learn`` would draw it after receiving ``batch``."""
        ...


ALGORITHMS = {
    "ppo": ppo,
    "a2c": a2c,
    "dqn": dqn,
    "sac": sac,
    "td3": td3,
    "ddpg": ddpg,
}

