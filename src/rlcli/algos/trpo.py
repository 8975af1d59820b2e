"""Trust Region Policy Optimization (Schulman et al., 2015) with GAE (Schulman et al., 2016).

Each rollout takes one policy step: the natural gradient of the importance-weighted surrogate, solved
by conjugate gradients against Fisher-vector products (the Hessian of the mean KL by double backward),
scaled to the KL bound ``max_kl`` and shrunk by a backtracking line search until the surrogate improves
within the bound (or dropped when no try does). The value function then regresses the value targets by
``value_epochs`` passes of minibatch steps of ``[optim]``, which moves the value's weights only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch

from rlcli import keys
from rlcli.algos.context import BuildContext
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import TRPOConfig
from rlcli.learning.advantages import masked_mean, normalized_advantage
from rlcli.learning.on_policy import ROLLOUT_PHASES, RolloutLearner

# The actor-critic alone, for evaluation: this module's build_agent.
from rlcli.learning.on_policy import build_agent as build_agent
from rlcli.timing import Timer

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.models.actor_critic import ActorCritic


# What the policy step and the value regression read.
LOSS_KEYS = (keys.INPUT, keys.ACTION, keys.LOG_PROB, keys.ADVANTAGE, keys.VALUE_TARGET)


def policy_weights(agent: ActorCritic) -> list[torch.nn.Parameter]:
    """The weights the policy's distribution depends on: its encoder's and its head's."""
    return [*agent.encoder.parameters(), *agent.policy.parameters()]


def value_weights(agent: ActorCritic) -> list[torch.nn.Parameter]:
    """The value function's own weights (not a shared encoder's, which the policy step moves)."""
    policy = {id(param) for param in policy_weights(agent)}
    return [param for param in agent.parameters() if id(param) not in policy]


def conjugate_gradient(
    product: Callable[[torch.Tensor], torch.Tensor], b: torch.Tensor, iterations: int
) -> torch.Tensor:
    """An approximate solution x of ``A x = b`` ([P] float32) for a symmetric positive-definite A given by
    its ``product`` with a vector, after at most ``iterations`` conjugate-gradient steps from x = 0
    (stopping early once the residual's squared norm is below 1e-10)."""
    x = torch.zeros_like(b)
    residual = b.clone()
    direction = b.clone()
    norm = residual.dot(residual)
    for _ in range(iterations):
        if norm < 1e-10:
            break
        image = product(direction)
        step = norm / direction.dot(image)
        x += step * direction
        residual -= step * image
        new_norm = residual.dot(residual)
        direction = residual + (new_norm / norm) * direction
        norm = new_norm
    return x


def natural_gradient(
    surrogate: torch.Tensor,
    kl: torch.Tensor,
    params: list[torch.nn.Parameter],
    *,
    iterations: int,
    damping: float,
    mean: Callable[[torch.Tensor], torch.Tensor] = lambda x: x,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The natural gradient ``x ~ (F + damping I)^-1 g`` of ``surrogate`` over ``params`` ([P] float32,
    by :func:`conjugate_gradient`) and its curvature ``x^T (F + damping I) x`` (a scalar), where ``g`` is
    the surrogate's gradient and ``F`` the Hessian of ``kl`` at the current weights (the Fisher matrix,
    as KL(old || new) has zero gradient at new = old), its products taken by double backward. ``mean``
    averages ``g`` and each product over data-parallel ranks."""
    gradient = mean(_flat(torch.autograd.grad(surrogate, params, retain_graph=True)))
    kl_gradient = _flat(torch.autograd.grad(kl, params, create_graph=True))

    def fisher(vector: torch.Tensor) -> torch.Tensor:
        product = torch.autograd.grad(kl_gradient.dot(vector), params, retain_graph=True)
        return mean(_flat(product)) + damping * vector

    direction = conjugate_gradient(fisher, gradient, iterations)
    return direction, direction.dot(fisher(direction))


def _flat(tensors) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in tensors])


def _assign(params: Sequence[torch.Tensor], vector: torch.Tensor) -> None:
    """Copy ``vector`` ([P]) into ``params`` in place (their storage, and whatever holds it, stays)."""
    with torch.no_grad():
        torch._foreach_copy_(
            list(params), [chunk.view_as(p) for p, chunk in zip(params, vector.split([p.numel() for p in params]))]
        )


class Surrogate:
    """The surrogate objective and the KL to the rollout's policy over a batch of rows, as a function of the
    policy's current weights.

    Reads ``input``, ``action``, ``log_prob``, ``advantage`` and, when present, ``valid`` and
    ``action_mask`` of ``rows``; means are over the valid rows (:func:`masked_mean`), advantages are
    normalized over them when asked."""

    def __init__(self, agent: ActorCritic, rows: TensorDict, *, normalize_advantage: bool):
        self.agent = agent
        self.inputs, self.action = rows[keys.INPUT], rows[keys.ACTION]
        self.mask = rows.get(keys.ACTION_MASK, None)
        valid = rows.get(keys.VALID, None)
        self.mean = masked_mean(valid)
        advantage = rows[keys.ADVANTAGE]
        self.advantage = normalized_advantage(advantage, valid) if normalize_advantage else advantage
        self.old_log_prob = rows[keys.LOG_PROB]
        with torch.no_grad():
            self.old = self.distribution()

    def distribution(self):
        return self.agent.policy(self.agent.encoder(self.inputs), self.mask)

    def __call__(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(surrogate, mean KL(old || current), mean entropy), each a scalar, under the current weights:
        ``surrogate = mean(pi(a|s) / pi_old(a|s) * A)``, ``pi_old`` the policy that acted (its stored
        log-probabilities)."""
        head = self.agent.policy
        dist = self.distribution()
        ratio = (head.log_prob(dist, self.action) - self.old_log_prob).exp()
        surrogate = self.mean(ratio * self.advantage)
        return surrogate, self.mean(head.kl(self.old, dist)), self.mean(head.entropy(dist))


class TRPO:
    """TRPO's learning step: advantages, one natural-gradient policy step within the KL bound, then the
    value function's minibatch steps."""

    def __init__(self, cfg: TRPOConfig, ctx: BuildContext):
        self.cfg = cfg
        self.rollout = RolloutLearner(cfg, ctx, names=LOSS_KEYS, trained=value_weights)
        self.agent, self.step = self.rollout.agent, self.rollout.step
        self.act, self.ingest_and_sample = self.rollout.act, self.rollout.ingest_and_sample
        self.group = self.step.group
        self.policy_params = policy_weights(self.agent)
        # Value minibatch order, drawn on the training device.
        self.generator = torch.Generator(device=ctx.device)
        self.generator.manual_seed(ctx.seed)
        self.device = ctx.device

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]:
        """The surrogate (negated, as ``loss/policy``), the value regression and the KL to the policy that
        acted, of a batch of rows; ``loss/total`` sums the two losses (what the bench differentiates)."""
        surrogate, kl, entropy = Surrogate(self.agent, batch, normalize_advantage=self.cfg.normalize_advantage)()
        terms = {
            "loss/policy": -surrogate,
            "loss/value": self._value_loss(batch),
            "stats/kl": kl,
            "stats/entropy": entropy,
        }
        terms["loss/total"] = terms["loss/policy"] + terms["loss/value"]
        return terms

    def _value_loss(self, rows: TensorDict) -> torch.Tensor:
        value = self.agent.state_value(rows[keys.INPUT])
        return masked_mean(rows.get(keys.VALID, None))((value - rows[keys.VALUE_TARGET]).square())

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Advantages, the policy step, the value steps, then the statistics take in the rollout; returns
        the step's surrogate gain, KL, line-search outcome, the mean value loss and the learning rate used."""
        lr = self.step.lr
        rows = self.rollout.rows(batch, timer)
        with timer.phase("update.natural"):
            stats = self.policy_step(rows)
        stats |= self.value_steps(rows, timer)
        self.rollout.finish(batch)
        # The sum loss() reports too: the surrogate after the step (negated) and the mean value loss.
        stats["loss/total"] = stats["loss/policy"] + stats["loss/value"]
        return stats | {"optim/lr": lr}

    def policy_step(self, rows: TensorDict) -> dict[str, float]:
        """One natural-gradient step of the policy's weights within ``max_kl`` (Schulman et al., 2015,
        appendix C), or none when the line search finds no improving step within the bound."""
        cfg, group, params = self.cfg, self.group, self.policy_params
        objective = Surrogate(self.agent, rows, normalize_advantage=cfg.normalize_advantage)
        surrogate, kl, entropy = objective()
        direction, curvature = natural_gradient(
            surrogate, kl, params, iterations=cfg.cg_iterations, damping=cfg.cg_damping, mean=group.mean
        )
        start, base = _flat(params).detach(), float(group.mean(surrogate.detach()))
        accepted, new_surrogate, new_kl, fraction = False, base, 0.0, 0.0
        if curvature > 0:
            # The largest step along the direction whose quadratic model of the KL stays at max_kl.
            full = direction * torch.sqrt(2 * cfg.max_kl / curvature)
            fraction = 1.0
            for _ in range(cfg.backtracks):
                _assign(params, start + fraction * full)
                with torch.no_grad():
                    surrogate_tried, kl_tried, _ = objective()
                tried, tried_kl = float(group.mean(surrogate_tried)), float(group.mean(kl_tried))
                if tried_kl < cfg.max_kl and tried > base:
                    accepted, new_surrogate, new_kl = True, tried, tried_kl
                    break
                fraction *= cfg.backtrack_ratio
        if not accepted:
            _assign(params, start)
            fraction = 0.0
        return {
            "loss/policy": -new_surrogate,
            "stats/surrogate_gain": new_surrogate - base,
            "stats/kl": new_kl,
            "stats/step_fraction": fraction,
            "stats/line_search": float(accepted),
            "stats/entropy": float(entropy.detach()),
        }

    def value_steps(self, rows: TensorDict, timer: Timer) -> dict[str, float]:
        """``value_epochs`` passes of shuffled ``value_minibatch_size`` steps of the value regression; returns
        the mean ``loss/value`` over them and their count."""
        cfg = self.cfg
        size = rows.batch_size[0]
        # The three columns a value step reads, indexed apart: a TensorDict's indexing costs more than the step.
        inputs, target, valid = rows[keys.INPUT], rows[keys.VALUE_TARGET], rows[keys.VALID]
        total, steps = torch.zeros((), device=self.device), 0
        for _ in range(cfg.value_epochs):
            order = torch.randperm(size, generator=self.generator, device=self.device)
            for start in range(0, size, cfg.value_minibatch_size):
                index = order[start : start + cfg.value_minibatch_size]
                with timer.phase("update.forward"):
                    value = self.agent.state_value(inputs[index])
                    loss = masked_mean(valid[index])((value - target[index]).square())
                self.step(loss, timer, rows=valid[index].sum())
                total += loss.detach()
                steps += 1
        return {"loss/value": float(total) / max(steps, 1), "stats/gradient_steps": float(steps)}

    def state_dict(self, *, replay: bool = True) -> dict:
        return self.rollout.state_dict() | {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.rollout.load_state_dict(state)
        self.generator.set_state(state["generator"])


PHASES = (*ROLLOUT_PHASES, "update.natural")
METRICS = (
    "loss/policy",
    "loss/value",
    "loss/total",
    "stats/surrogate_gain",
    "stats/kl",
    "stats/step_fraction",
    "stats/line_search",
    "stats/entropy",
    "stats/gradient_steps",
    "optim/lr",
)


def build(cfg: TRPOConfig, ctx: BuildContext) -> TRPO:
    """TRPO with an actor-critic sized from ``ctx``'s spaces, the value function's optimizer and the reward
    scaler."""
    return TRPO(cfg, ctx)


SPEC = AlgorithmSpec(
    config=TRPOConfig,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    metrics=METRICS,
)
