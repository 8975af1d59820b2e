"""Advantages and TD targets over time-major ``[T, N]`` rollouts and replay samples, and the masked
means of losses over fixed-size batches: pure tensor functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from rlcli import keys

if TYPE_CHECKING:
    # Only a type here.
    from tensordict import TensorDict


_CHUNK = 32


def masked_mean(valid: torch.Tensor | None) -> Callable[[torch.Tensor], torch.Tensor]:
    """The mean over the rows where ``valid`` ([B] bool) is True, 0 when there are none; the plain
    mean without ``valid``. A loss over every row of a fixed-size batch, invalid ones masked, has
    the same size on every rank and stays finite when no row is valid."""
    if valid is None:
        return torch.mean
    weight = valid.to(torch.float32)
    count = weight.sum().clamp(min=1.0)
    return lambda values: (values * weight).sum() / count


def normalized_advantage(advantage: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
    """``advantage`` ([B]) centred and divided by its unbiased standard deviation over the valid
    rows (all rows without ``valid``); as it is when fewer than two rows are valid (no spread)."""
    if valid is None:
        if advantage.numel() < 2:
            return advantage
        return (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    mean = masked_mean(valid)
    centred = advantage - mean(advantage)
    count = valid.sum()
    std = (mean(centred.square()) * count / (count - 1).clamp(min=1)).sqrt()
    return torch.where(count > 1, centred / (std + 1e-8), advantage)


def gae(
    reward: torch.Tensor,
    value: torch.Tensor,
    next_value: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    *,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimates and value targets for a rollout (Schulman et al., 2016).

    ``A_t = d_t + gamma * lam * (1 - done_t) * A_{t+1}`` with
    ``d_t = r_t + gamma * (1 - terminated_t) * V(s_{t+1}) - V(s_t)``, computed
    without a Python loop over time: a discounted reverse sum of ``d`` by
    blocked matrix products, minus the part of that sum past each episode's end.

    Args:
        reward, value, next_value: [T, N] float32. ``next_value[t]`` is the value
            of the observation after step t (the final observation on truncation).
        terminated, truncated: [T, N] bool. Both end the trace; only termination
            drops the bootstrap.

    Returns:
        (advantage, value_target), each [T, N] float32.
    """
    work = torch.float64
    delta = reward.to(work) + gamma * next_value.to(work) * (~terminated) - value.to(work)
    advantage = _episode_reverse_sum(delta, gamma * lam, terminated | truncated).to(reward.dtype)
    return advantage, advantage + value


def td0(
    reward: torch.Tensor,
    value: torch.Tensor,
    next_value: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    *,
    gamma: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One-step TD targets and their advantages for a rollout (Sutton, 1988).

    ``G_t = r_t + gamma * (1 - terminated_t) * V(s_{t+1})``: every step bootstraps from
    ``next_value``, truncated ones too (the clock ended the episode, not the task).

    Args:
        reward, value, next_value: [T, N] float32. ``next_value[t]`` is the value
            of the observation after step t (the final observation on truncation).
        terminated, truncated: [T, N] bool. Only termination drops the bootstrap;
            ``truncated`` changes nothing for a one-step target and is taken so that
            every estimator has the same arguments.

    Returns:
        (advantage, value_target), each [T, N] float32, ``advantage = value_target - value``.
    """
    # One multiply-add: nothing accumulates, so no float64 as in the multi-step estimators.
    target = reward + gamma * next_value * (~terminated)
    return target - value, target


def td1(
    reward: torch.Tensor,
    value: torch.Tensor,
    next_value: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    *,
    gamma: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Monte-Carlo returns and their advantages for a rollout: TD(1) targets (Sutton, 1988).

    ``G_t = r_t + gamma * G_{t+1}`` inside an episode; a terminated step ends with ``r_t``,
    a truncated step and the rollout's last step end with ``r_t + gamma * V(s_{t+1})``:
    the critic stands in only for the rewards the rollout did not see.

    Args:
        reward, value, next_value: [T, N] float32. ``next_value[t]`` is the value
            of the observation after step t (the final observation on truncation).
        terminated, truncated: [T, N] bool. Both end the return; only termination
            drops the bootstrap.

    Returns:
        (advantage, value_target), each [T, N] float32, ``advantage = value_target - value``.
    """
    work = torch.float64
    carried = _carried(terminated, truncated)
    # Only where the return stops here does the critic's value enter it.
    bootstrap = torch.where(carried, 0.0, next_value.to(work) * (~terminated))
    step = reward.to(work) + gamma * bootstrap
    target = _episode_reverse_sum(step, gamma, terminated | truncated).to(reward.dtype)
    return target - value, target


def td_lambda(
    reward: torch.Tensor,
    value: torch.Tensor,
    next_value: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    *,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """lambda-returns and their advantages for a rollout: TD(lambda) targets (Sutton, 1988;
    Sutton and Barto, 2018, section 12.1).

    ``G_t = r_t + gamma * ((1 - lam) * V(s_{t+1}) + lam * G_{t+1})`` inside an episode; a
    terminated step ends with ``r_t``, a truncated step and the rollout's last step end with
    ``r_t + gamma * V(s_{t+1})``. ``lam = 0`` gives :func:`td0`, ``lam = 1`` :func:`td1`;
    where ``next_value[t] == value[t + 1]`` inside episodes, the targets are :func:`gae`'s.

    Args:
        reward, value, next_value: [T, N] float32. ``next_value[t]`` is the value
            of the observation after step t (the final observation on truncation).
        terminated, truncated: [T, N] bool. Both end the return; only termination
            drops the bootstrap.

    Returns:
        (advantage, value_target), each [T, N] float32, ``advantage = value_target - value``.
    """
    work = torch.float64
    carried = _carried(terminated, truncated)
    # Where the return goes on, (1 - lam) of it is the critic's now and lam the next step's return.
    weight = torch.where(carried, 1.0 - lam, (~terminated).to(work))
    step = reward.to(work) + gamma * weight * next_value.to(work)
    target = _episode_reverse_sum(step, gamma * lam, terminated | truncated).to(reward.dtype)
    return target - value, target


Estimator = Callable[..., tuple[torch.Tensor, torch.Tensor]]

# Each called the same way, (reward, value, next_value, terminated, truncated, gamma=, lam=):
# TD(0) and TD(1) have no lambda.
ESTIMATORS: dict[str, Estimator] = {
    "gae": gae,
    "td0": lambda *rollout, gamma, lam: td0(*rollout, gamma=gamma),
    "td1": lambda *rollout, gamma, lam: td1(*rollout, gamma=gamma),
    "td_lambda": td_lambda,
}
"""Each estimator by its name, the configs' ``value_target``: a function of a ``[T, N]`` rollout
that returns (advantage, value_target)."""


def add_advantages(
    batch: TensorDict,
    *,
    estimator: str = "gae",
    gamma: float,
    lam: float,
    reward: torch.Tensor | None = None,
    value: torch.Tensor | None = None,
    next_value: torch.Tensor | None = None,
) -> TensorDict:
    """Write ``advantage`` and ``value_target`` into a ``[T, N]`` rollout by ``estimator`` of
    :data:`ESTIMATORS` (``lam`` is read by ``gae`` and ``td_lambda`` only).

    Reads ``terminated`` and ``truncated``, and ``reward``, ``value`` and ``next_value`` unless
    they are given ([T, N] float32 each: a scaled reward, or zeros where there is no critic).
    """
    advantage, target = ESTIMATORS[estimator](
        batch[keys.REWARD] if reward is None else reward,
        batch[keys.VALUE] if value is None else value,
        batch[keys.NEXT_VALUE] if next_value is None else next_value,
        batch[keys.TERMINATED],
        batch[keys.TRUNCATED],
        gamma=gamma,
        lam=lam,
    )
    batch[keys.ADVANTAGE] = advantage
    batch[keys.VALUE_TARGET] = target
    return batch


def _carried(terminated: torch.Tensor, truncated: torch.Tensor) -> torch.Tensor:
    """[T, N] bool: True where the return goes on to the next step of the rollout (no episode end
    and not the rollout's last step)."""
    carried = ~(terminated | truncated)
    carried[-1] = False
    return carried


def episode_ended(terminated: torch.Tensor, truncated: torch.Tensor) -> torch.Tensor:
    """[T, N] bool: True at the steps whose episode ends inside the rollout (terminated or
    truncated at that step or a later one), False at the steps of episodes the rollout cut.

    Args:
        terminated, truncated: [T, N] bool.
    """
    done = terminated | truncated
    return done.gather(0, _episode_end(done))


def _episode_end(done: torch.Tensor) -> torch.Tensor:
    """[T, N] int64: the index of the last step of each step's episode, T - 1 for the steps of
    an episode the rollout cut (``done`` [T, N] bool)."""
    steps = done.shape[0]
    time = torch.arange(steps, device=done.device).unsqueeze(1).expand_as(done)
    end_index = torch.where(done, time, torch.full_like(time, steps - 1))
    return torch.flip(torch.cummin(torch.flip(end_index, (0,)), 0).values, (0,))


def _episode_reverse_sum(x: torch.Tensor, decay: float, done: torch.Tensor) -> torch.Tensor:
    """``S_t = sum_{k=t}^{e_t} decay^(k - t) x_k`` over dim 0, ``e_t`` the last step of t's
    episode: the recursion ``S_t = x_t + decay * (1 - done_t) * S_{t+1}`` (``S_T = 0``) without
    a Python loop over time.

    Args:
        x: [T, N] float64.
        done: [T, N] bool, where episodes end.
    """
    steps = x.shape[0]
    discounted = _discounted_reverse_sum(x, decay)
    # F_t sums x_k over all k >= t. Cut it at e_t: S_t = F_t - decay^(e_t + 1 - t) * F_{e_t + 1}.
    time = torch.arange(steps, device=x.device).unsqueeze(1).expand_as(done)
    after = _episode_end(done) + 1
    padded = torch.cat([discounted, discounted.new_zeros(1, discounted.shape[1])])
    tail = padded.gather(0, after)
    return discounted - torch.pow(decay, (after - time).to(x.dtype)) * tail


def _discounted_reverse_sum(x: torch.Tensor, decay: float) -> torch.Tensor:
    """``F_t = sum_{k >= t} decay^(k - t) x_k`` over dim 0 of ``x`` ([T, N]).

    Inside blocks of ``_CHUNK`` steps the sum is one matrix product with the
    upper-triangular ``decay^(j - i)``; the blocks are joined the same way, one
    level up, so memory stays linear in T. All weights are <= 1, so nothing
    overflows for long rollouts.
    """
    steps, envs = x.shape
    if steps <= _CHUNK:
        return torch.matmul(_decay_matrix(steps, decay, x), x)
    chunks = -(-steps // _CHUNK)
    padded = torch.zeros(chunks * _CHUNK, envs, dtype=x.dtype, device=x.device)
    padded[:steps] = x
    blocks = padded.view(chunks, _CHUNK, envs)
    inner = _decay_matrix(_CHUNK, decay, x)
    within = torch.matmul(inner, blocks)
    # within[c, 0] is block c's sum seen from its first step; chaining the blocks
    # from the back is the same sum one level up, with decay^_CHUNK per block.
    carried = _discounted_reverse_sum(within[:, 0], decay**_CHUNK)
    next_head = torch.cat([carried[1:], carried.new_zeros(1, envs)])
    offsets = torch.arange(_CHUNK, 0, -1, device=x.device, dtype=x.dtype)
    result = within + (decay**offsets).view(1, _CHUNK, 1) * next_head.unsqueeze(1)
    return result.view(chunks * _CHUNK, envs)[:steps]


def _decay_matrix(size: int, decay: float, like: torch.Tensor) -> torch.Tensor:
    """[size, size] with ``decay^(j - i)`` for j >= i and 0 below the diagonal."""
    index = torch.arange(size, device=like.device, dtype=like.dtype)
    power = index.unsqueeze(0) - index.unsqueeze(1)
    return torch.where(power >= 0, torch.pow(decay, power.clamp(min=0)), power.new_zeros(()))


def n_step_returns(
    reward: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    *,
    gamma: float,
    n: int,
    starts: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Discounted n-step reward sums for the first ``starts`` steps of a rollout.

    A window starting at step s sums ``gamma^k r_{s+k}`` for k < n and stops
    early at the step that ends its episode (terminated or truncated); the
    caller bootstraps from the observation after the window's last step with
    ``gamma ** steps`` unless that step terminated. Windows never run past the
    rollout: ``starts + n - 1`` must not exceed T.

    Args:
        reward: [T, N] float32.
        terminated, truncated: [T, N] bool.

    Returns:
        (returns [S, N] float32, last [S, N] int64, the index of each window's
        last step, and discount [S, N] float32, ``gamma ** steps``), S = ``starts``.
    """
    done = terminated | truncated
    returns = torch.zeros_like(reward[:starts])
    last = torch.arange(starts, device=reward.device).unsqueeze(1).expand(starts, reward.shape[1]).clone()
    open_ = torch.ones_like(done[:starts])
    for k in range(n):
        returns += open_ * (gamma**k) * reward[k : k + starts]
        last = torch.where(open_, last.new_full((), k) + torch.arange(starts, device=reward.device)[:, None], last)
        open_ = open_ & ~done[k : k + starts]
    steps = last - torch.arange(starts, device=reward.device)[:, None] + 1
    return returns, last, torch.pow(gamma, steps.to(reward.dtype))


def bootstrapped_target(batch: TensorDict, next_value: torch.Tensor, *, gamma: float) -> torch.Tensor:
    """``reward + discount * (1 - terminated) * next_value``, the one-step (or n-step) TD target.

    Reads ``reward`` and ``terminated`` [B] and, when present, ``discount`` [B] (gamma to the
    n-step window's length); otherwise ``gamma``. Truncation bootstraps like any other step:
    only termination drops ``next_value`` ([B] float32, or [B, K] for K values per row, such as a
    return distribution's quantiles: the target is then [B, K]).
    """
    reward, alive, discount = batch[keys.REWARD], ~batch[keys.TERMINATED], batch.get(keys.DISCOUNT, None)
    if next_value.dim() > 1:
        reward, alive = reward.unsqueeze(-1), alive.unsqueeze(-1)
        discount = None if discount is None else discount.unsqueeze(-1)
    discount = gamma if discount is None else discount
    return reward + discount * alive * next_value
