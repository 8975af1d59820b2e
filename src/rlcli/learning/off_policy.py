"""The wiring every replay-based algorithm shares around its own maths."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from functools import reduce
from typing import TYPE_CHECKING, Protocol, TypeVar

import torch

from rlcli import keys

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.learning.exploration import ActionBounds
    from rlcli.learning.optim import GradientStep
    from rlcli.timing import Timer


class _Stored(Protocol):
    """What the learner reads of a replay's storage: where samples are drawn, and how many rows it holds."""

    @property
    def storage_device(self) -> torch.device: ...

    def __len__(self) -> int: ...


class LearnerReplay(Protocol):
    """What :class:`ReplayLearner` uses of its replay: the online :class:`~rlcli.replay.Replay` and a
    dataset's :class:`~rlcli.replay.offline.OfflineReplay` both satisfy it."""

    @property
    def buffer(self) -> _Stored: ...

    @property
    def learning(self) -> bool: ...

    def sample(self, size: int, generator: torch.Generator) -> TensorDict: ...

    def observe(self, batch: TensorDict) -> None: ...

    def due(self, frames: int) -> int: ...

    def prioritize(self, sample: TensorDict, td_error: torch.Tensor, timer: Timer) -> None: ...

    def state_dict(self, *, storage: bool = True) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


REPLAY_PHASES = (
    "update.extend",
    "update.sample",
    "update.forward",
    "update.backward",
    "update.optimizer",
    "update.priority",
    "update.target",
)
"""The timed sub-phases of a replay-based ``learn``: storing the batch, sampling, and the steps of
the algorithm's ``update`` (its forward, the gradient step, priorities and targets)."""

UNPRIORITIZED_PHASES = tuple(phase for phase in REPLAY_PHASES if phase != "update.priority")
""":data:`REPLAY_PHASES` of an algorithm that never updates priorities (one that samples a dataset)."""

REPLAY_METRICS = ("stats/gradient_steps", "stats/buffer_size", "optim/lr")
"""The row keys :meth:`ReplayLearner.learn` reports besides the terms and ``loss/total``: the last
columns of an algorithm's ``METRICS``."""

Update = Callable[["TensorDict", "Timer"], dict[str, torch.Tensor]]
"""An algorithm's gradient step on one normalized replay sample; returns its loss terms (the learner
detaches them)."""

Term = TypeVar("Term", torch.Tensor, float)

CriticStep = Callable[[dict[str, torch.Tensor]], None]
"""What a replay algorithm's ``update`` does between its critic's terms and the terms it forms after the
critic has stepped (an actor's): the critic's gradient step on the terms so far (popping ``td_error``, where
there is one, for the priorities). Its ``loss`` passes none: every term, on the same weights."""

Step = Callable[[torch.Tensor], None]
"""A gradient step ``update`` takes on one loss between the terms of its term function (IQL's value and
critic steps); ``loss`` passes none."""


class Untimed:
    """A timer that records nothing: the phases of an algorithm's term function when ``loss`` calls it
    (outside ``learn``; the bench times the call by its own clock, the tests not at all)."""

    def phase(self, name: str) -> AbstractContextManager[None]:
        return nullcontext()


UNTIMED = Untimed()
"""The one :class:`Untimed`: it holds no state."""


def total_loss(terms: Mapping[str, Term], names: tuple[str, ...]) -> Term | None:
    """``loss/total``: the ``names`` of ``terms`` summed in their order, those absent left out (an actor's
    terms from the means of an iteration whose steps all came between two actor steps); None when
    none is present. Of one minibatch's tensors (an algorithm's ``loss``) or of an iteration's means
    (its ``learn``): the one rule of each algorithm, in one place."""
    present = [terms[name] for name in names if name in terms]
    return reduce(operator.add, present) if present else None


class ReplayLearner:
    """What an off-policy ``learn`` does around the algorithm's ``update``.

    Stores each fresh batch in ``replay``, runs ``update`` for the gradient steps the batch pays
    for on samples of ``batch_size`` drawn with a generator of its own (on the storage's device,
    seeded by ``seed``), reports ``loss/total`` as the sum of the ``total`` terms' means
    (:func:`total_loss`), and advances the schedules of ``steps``. Its state covers the steps,
    that generator and the replay, under the names ``steps`` gives them.
    """

    def __init__(
        self,
        replay: LearnerReplay,
        steps: dict[str, GradientStep],
        *,
        batch_size: int,
        seed: int,
        total: tuple[str, ...],
    ):
        self.replay = replay
        self.steps = steps
        self.batch_size = batch_size
        self.total = total
        self.generator = torch.Generator(device=replay.buffer.storage_device)
        self.generator.manual_seed(seed)

    def learn(self, batch: TensorDict, timer: Timer, update: Update) -> dict[str, float]:
        """Store ``batch``, then the gradient steps it pays for; returns the terms' means over those
        steps and ``loss/total`` (none without a step), ``stats/gradient_steps``,
        ``stats/buffer_size`` and ``optim/lr`` (before the schedule moves)."""
        stats = {"optim/lr": next(iter(self.steps.values())).lr}
        with timer.phase("update.extend"):
            self.replay.observe(batch)
        steps = self.replay.due(batch.batch_size.numel())
        stats |= self._train(steps, timer, update)
        total = total_loss(stats, self.total)
        if total is not None:
            stats["loss/total"] = total
        stats["stats/gradient_steps"] = float(steps)
        stats["stats/buffer_size"] = float(len(self.replay.buffer))
        for step in self.steps.values():
            step.end_iteration()
        return stats

    def _train(self, steps: int, timer: Timer, update: Update) -> dict[str, float]:
        """Run ``update`` on ``steps`` fresh samples; returns each term's mean over the steps that
        reported it (an actor term on delayed steps only)."""
        seen: dict[str, list[torch.Tensor]] = {}
        for _ in range(steps):
            with timer.phase("update.sample"):
                sample = self.replay.sample(self.batch_size, self.generator)
            for name, value in update(sample, timer).items():
                seen.setdefault(name, []).append(value.detach())
        # One stack and mean per term, once per batch rather than once per step.
        return {name: float(torch.stack(values).mean()) for name, values in seen.items()}

    def loss(self, terms: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """An algorithm's ``loss``: one minibatch's ``terms`` with ``loss/total`` added, the sum of the ``total``
        terms (:func:`total_loss`), the rule :meth:`learn` reports the means by."""
        total = total_loss(terms, self.total)
        if total is None:
            # A minibatch's terms are all on the same weights, actor's included: the rule always finds its terms.
            raise ValueError(f"none of the loss/total terms {self.total} is among {sorted(terms)}")
        terms["loss/total"] = total
        return terms

    def critic_step(self, step: GradientStep, sample: TensorDict, timer: Timer) -> CriticStep:
        """The :data:`CriticStep` of an ``update`` on ``sample``: ``step`` on its ``loss/critic``, then the
        priorities of ``sample`` from the ``td_error`` it pops."""

        def take(terms: dict[str, torch.Tensor]) -> None:
            td_error = terms.pop("td_error")
            step(terms["loss/critic"], timer)
            self.replay.prioritize(sample, td_error, timer)

        return take

    def ingest_and_sample(self, batch: TensorDict, size: int, generator: torch.Generator) -> TensorDict:
        """Store ``batch`` as :meth:`learn` does, then draw a normalized sample of ``size`` transitions
        with ``generator`` (what the bench suites time of an algorithm's replay)."""
        self.replay.observe(batch)
        return self.replay.sample(size, generator)

    @torch.no_grad()
    def act(
        self,
        observation: torch.Tensor,
        generator: torch.Generator,
        bounds: ActionBounds,
        actor: Callable[[torch.Tensor], torch.Tensor],
    ) -> TensorDict:
        """``action`` [N, A] for raw ``observation`` [N, obs]: uniform in ``bounds`` during the
        warm-up, then ``actor(observation)``."""
        from tensordict import TensorDict

        n = observation.shape[0]
        action = actor(observation) if self.replay.learning else bounds.uniform(n, generator)
        return TensorDict({keys.ACTION: action}, batch_size=[n])

    def state_dict(self, *, replay: bool = True) -> dict:
        """Each gradient step by its name, the sample generator and the replay (its transitions
        only with ``replay``)."""
        state = {name: step.state_dict() for name, step in self.steps.items()}
        return state | {"generator": self.generator.get_state(), "replay": self.replay.state_dict(storage=replay)}

    def load_state_dict(self, state: dict) -> None:
        for name, step in self.steps.items():
            step.load_state_dict(state[name])
        self.generator.set_state(state["generator"])
        self.replay.load_state_dict(state["replay"])
