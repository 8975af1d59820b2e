"""Exploration for collection: epsilon-greedy acting over Discrete actions (any value-based
algorithm), and action noise and bounds for deterministic continuous-control actors (TD3, DDPG).

Noise scales are fractions of each action dimension's half-range, so 0.1 means the
same on Pendulum's [-2, 2] as on MuJoCo's [-1, 1]; noisy actions are clipped
back into the bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
from torch import nn

from rlcli import draws

NoiseType = Literal["gaussian", "ou"]


def masked_argmax(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """The best action of each row ([N] int64) of ``values`` ([N, A]) among those ``mask`` allows
    ([N, A] bool, True: allowed), or among all without a mask: the masking helper of Discrete values."""
    if mask is None:
        return values.argmax(-1)
    return values.masked_fill(~mask, float("-inf")).argmax(-1)


def masked_max(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """The largest of each row ([N]) of ``values`` ([N, A]) over the actions ``mask`` allows; 0 in a row
    that allows none (a final state with no legal action: its bootstrap is dropped or meaningless, and
    must not be -inf, which a termination's 0 would turn into NaN)."""
    if mask is None:
        return values.max(-1).values
    best = values.masked_fill(~mask, float("-inf")).max(-1).values
    return torch.where(mask.any(-1), best, torch.zeros_like(best))


def uniform_discrete(
    rows: torch.Tensor, num_actions: int, generator: torch.Generator | None, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """One action per entry of ``rows`` ([n], any dtype, on the device to draw on), drawn uniformly among
    ``num_actions`` or among those ``mask`` allows ([n, A] bool); [n] int64. With ``generator`` None, from
    torch's default generator (:mod:`rlcli.draws`)."""
    if mask is None:
        return draws.integers(num_actions, rows, generator)
    # A row that allows nothing (a final observation a NEXT_STEP env acts on, an action never taken)
    # draws from every action rather than failing.
    weights = (mask | ~mask.any(-1, keepdim=True)).float()
    return torch.multinomial(weights, 1, generator=generator).squeeze(1)


def epsilon_greedy(
    greedy: torch.Tensor,
    epsilon: float,
    num_actions: int,
    generator: torch.Generator | None,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """``greedy`` ([N] int64) with each action replaced, with probability ``epsilon``, by a uniform one
    (among the actions ``mask`` allows, [N, A] bool, when given).

    Draws the uniform actions first, then the coin flips, from ``generator`` (None: torch's default one).
    """
    uniform = uniform_discrete(greedy, num_actions, generator, mask)
    explore = draws.uniform(greedy, generator, torch.float32) < epsilon
    return torch.where(explore, uniform, greedy)


class EpsilonGreedy:
    """Epsilon-greedy collection over ``num_actions`` Discrete actions, on a schedule: uniform actions
    during the warm-up, then an exploration rate decaying linearly from ``start`` to ``end`` over
    ``decay_frames`` frames, and held at ``end`` after them.

    ``epsilon`` is the rate the next collection uses; :meth:`advance` moves it after each batch.
    The algorithm saves it with its state, rather than recomputing it: a resume may raise
    ``total_frames``, and with it ``decay_frames``.
    """

    def __init__(self, num_actions: int, *, start: float, end: float, decay_frames: float):
        self.num_actions = num_actions
        self.start, self.end, self.decay_frames = start, end, decay_frames
        self.epsilon = 1.0

    def advance(self, frames: int, *, learning: bool) -> None:
        """Set ``epsilon`` for ``frames`` collected so far: 1 until ``learning`` (the warm-up is over),
        then the linear decay."""
        if not learning:
            self.epsilon = 1.0
            return
        done = min(frames / self.decay_frames, 1.0) if self.decay_frames > 0 else 1.0
        self.epsilon = self.start + done * (self.end - self.start)

    def __call__(
        self,
        observation: torch.Tensor,
        greedy: Callable[[torch.Tensor], torch.Tensor],
        generator: torch.Generator,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Actions ([N] int64) for ``observation`` ([N, ...]): ``greedy(observation)`` ([N] int64, the argmax
        of the algorithm's values) at rate ``epsilon``, else uniform ones (among those ``mask`` allows,
        [N, A] bool, when given); at an ``epsilon`` of 1 uniform actions alone, without calling ``greedy``."""
        if self.epsilon >= 1.0:
            rows = torch.empty(observation.shape[0], device=observation.device)
            return uniform_discrete(rows, self.num_actions, generator, mask)
        return epsilon_greedy(greedy(observation), self.epsilon, self.num_actions, generator, mask)


class ActionNoise(nn.Module):
    """Gaussian or Ornstein-Uhlenbeck noise for N envs, added to actions in env units.

    The Ornstein-Uhlenbeck process (Uhlenbeck & Ornstein, 1930; used by DDPG,
    Lillicrap et al., 2016) keeps one state per env, ``x += theta * (0 - x) * dt
    + scale * sqrt(dt) * N(0, 1)``, saved with the algorithm; it runs on across
    episode ends.
    """

    half_range: torch.Tensor
    state: torch.Tensor

    def __init__(
        self,
        kind: NoiseType,
        *,
        scale: float,
        num_envs: int,
        half_range: torch.Tensor,
        theta: float = 0.15,
        dt: float = 1e-2,
    ):
        super().__init__()
        self.kind, self.scale, self.theta, self.dt = kind, scale, theta, dt
        self.register_buffer("half_range", half_range.clone())
        self.register_buffer("state", torch.zeros(num_envs, *half_range.shape))

    def forward(self, action: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """``action`` [N, A] plus one draw of noise, in env units (not yet clipped)."""
        draw = torch.randn(action.shape, generator=generator, device=action.device, dtype=action.dtype)
        if self.kind == "gaussian":
            unit = self.scale * draw
        else:
            self.state.add_(-self.theta * self.state * self.dt + self.scale * self.dt**0.5 * draw)
            unit = self.state
        return action + unit * self.half_range


def uniform_actions(low: torch.Tensor, high: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
    """``count`` actions [count, A] drawn uniformly in the Box ``[low, high]`` (an off-policy warm-up)."""
    unit = torch.rand((count, *low.shape), generator=generator, device=low.device)
    return low + unit * (high - low)


class ActionBounds:
    """A Box action space's bounds as float32 tensors on the training device.

    What the off-policy actors share: uniform warm-up actions, and clipping of noisy actions
    back into the bounds, so that what is stored is what the env executed.
    """

    def __init__(self, space, device: torch.device):
        self.low = torch.as_tensor(space.low, dtype=torch.float32, device=device)
        self.high = torch.as_tensor(space.high, dtype=torch.float32, device=device)

    def uniform(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """``count`` actions [count, A] drawn uniformly in the bounds."""
        return uniform_actions(self.low, self.high, count, generator)

    def clip(self, action: torch.Tensor) -> torch.Tensor:
        """``action`` [N, A] clipped into the bounds, dimension by dimension."""
        return torch.minimum(torch.maximum(action, self.low), self.high)
