"""Generalized state-dependent exploration (gSDE; Raffin, Kober & Stulp, "Smooth Exploration for Robotic
Reinforcement Learning", CoRL 2021 / PMLR 2022): the policy heads that explore with it and the schedule of
their noise matrices.

The exploration noise of an action is ``z @ E``: ``z`` ([B, L]) the policy's last hidden features, ``E``
([L, A]) a matrix of independent ``N(0, std^2)`` weights, drawn at a rollout's start and every
``sde_sample_freq`` steps and held in between (one per env), so that the noise changes smoothly with the
state. Given ``z``, the action ``mean + z @ E`` is Gaussian with variance ``z^2 @ std^2`` per dimension:
that Gaussian (plus :data:`EPSILON` in the variance) gives the log-probabilities and entropies the losses
use. The definitions are Stable-Baselines3's ``StateDependentNoiseDistribution`` (the numbers match it to
float rounding: ``benchmarks/peers/sb3_gsde_parity.py``): ``std = exp(log_std)`` or ``expln(log_std)``, of
shape [L, A] (``full_std``) or [L, 1] broadcast to [L, A]; the on-policy heads take the variance of
``z.detach()`` (SB3's ``learn_features=False``), the squashed actor of SAC and TQC of ``z`` itself and its
mean clipped to [-2, 2] (SB3's SAC actor: ``learn_features=True``, ``clip_mean=2``), its log-probability
that of the tanh-squashed action recovered by atanh, with the change of variables' ``log(1 - tanh^2 + 1e-6)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import torch
import torch.nn.functional as F
from gymnasium import spaces
from torch import nn
from torch.distributions import Normal, kl_divergence

from rlcli import draws
from rlcli.models.actors import _Rescale
from rlcli.models.heads import draw_through

if TYPE_CHECKING:
    from rlcli.config.schema import NetworkConfig
    from rlcli.models.encoders import Encoder

EPSILON = 1e-6
"""Stable-Baselines3's gSDE epsilon: added to the variance, to expln's argument and inside the tanh correction."""

HELD_NOISE = (
    "explores with gSDE (use_sde): its noise is a matrix held across steps and drawn again on a schedule, state "
    "that a file of one call has no place for, and a fresh draw at every call would not be the exploration it "
    "trained with. Export without --stochastic (the mean action), or sample in Python (rlcli eval --stochastic)"
)
"""Why ``rlcli export --stochastic`` refuses a gSDE policy (after "the <algo> policy of <folder> ")."""

CLIP_MEAN = 2.0
"""Bound of the squashed actor's pre-tanh mean (Stable-Baselines3's SAC ``clip_mean`` default with gSDE),
which keeps it off tanh's flat tails."""


def expln(log_std: torch.Tensor) -> torch.Tensor:
    """``exp(x)`` for ``x <= 0``, ``log1p(x + EPSILON) + 1`` above: positive, continuous at 0, and growing
    only logarithmically, so that a large ``log_std`` cannot blow the noise up (Stable-Baselines3's form)."""
    positive = log_std > 0
    below = log_std.exp() * ~positive
    above = (torch.log1p(log_std * positive + EPSILON) + 1.0) * positive
    return below + above


class StateDependentNoise(nn.Module):
    """gSDE's learned std of the noise weights, ``log_std`` ([L, A] with ``full_std``, else [L, 1]) for ``latent``
    hidden features and ``actions`` dimensions, all starting at ``log_std_init``."""

    def __init__(self, latent: int, actions: int, *, log_std_init: float, full_std: bool, use_expln: bool):
        super().__init__()
        self.latent, self.actions, self.use_expln = latent, actions, use_expln
        self.log_std = nn.Parameter(torch.full((latent, actions if full_std else 1), float(log_std_init)))

    def std(self) -> torch.Tensor:
        """[L, A] float32: the std of each noise weight."""
        std = expln(self.log_std) if self.use_expln else self.log_std.exp()
        return std.expand(self.latent, self.actions)

    def scale(self, latent: torch.Tensor) -> torch.Tensor:
        """[*B, A]: the std of the action given ``latent`` ([*B, L]), ``sqrt(z^2 @ std^2 + EPSILON)``."""
        return (latent.square() @ self.std().square() + EPSILON).sqrt()

    def draw(self, generator: torch.Generator | None, count: int | None = None) -> torch.Tensor:
        """Noise weights ``std * N(0, 1)`` drawn with ``generator``: one [L, A] matrix, or [count, L, A] (one per
        env). Differentiable in ``log_std`` (the reparameterization SAC's actor loss takes)."""
        std = self.std()
        like = std if count is None else std.expand(count, *std.shape)
        return std * draws.normal(like, generator)

    @staticmethod
    def perturbation(latent: torch.Tensor, matrices: torch.Tensor) -> torch.Tensor:
        """``z @ E`` ([B, A]) of ``latent`` ([B, L]) with one matrix for every row ([L, A]) or one per row ([B, L, A])."""
        if matrices.dim() == 2:
            return latent @ matrices
        return torch.bmm(latent.unsqueeze(1), matrices).squeeze(1)


def state_dependent_noise(network: NetworkConfig, latent: int, actions: int) -> StateDependentNoise:
    """The noise std of ``[network]`` (``log_std_init``, ``full_std``, ``use_expln``) for ``latent`` features."""
    return StateDependentNoise(
        latent, actions, log_std_init=network.log_std_init, full_std=network.full_std, use_expln=network.use_expln
    )


class StateDependentNormal(NamedTuple):
    """A gSDE policy's distribution at a batch of states: the action's Gaussian given the features, and the
    features (detached where the variance takes them detached) that the noise multiplies."""

    normal: Normal
    latent: torch.Tensor


def _trunk_and_mean(net: nn.Sequential, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(last hidden features [*B, L], the output layer's [*B, A]) of the MLP ``net`` on ``features``: with no
    hidden layer the features themselves are the latent, as in Stable-Baselines3."""
    latent = features
    # A list, not net[:-1]: torch types a Sequential's slice as Sequential | Module, which mypy cannot iterate.
    for layer in list(net)[:-1]:
        latent = layer(latent)
    return latent, net[-1](latent)


class StateDependentHead(nn.Module):
    """The on-policy algorithms' (PPO, A2C, TRPO) gSDE head over Box actions: the policy MLP ``net`` gives the
    mean from its last hidden features ``z``, and ``noise`` the std of ``z @ E``. The same interface as
    :class:`rlcli.models.heads.GaussianHead`; samples are unbounded (the collector clips them)."""

    def __init__(self, net: nn.Sequential, noise: StateDependentNoise):
        super().__init__()
        self.net = net
        self.noise = noise

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> StateDependentNormal:
        # Box actions have no masks (the config refuses them): ``mask`` is always None here.
        latent, mean = _trunk_and_mean(self.net, obs)
        # The variance sees the features detached (SB3's learn_features=False): the std's gradient moves
        # log_std alone, not the features the mean is computed from.
        latent = latent.detach()
        return StateDependentNormal(Normal(mean, self.noise.scale(latent), validate_args=False), latent)

    def sample(self, dist: StateDependentNormal, generator: torch.Generator | None) -> torch.Tensor:
        """``mean + z @ E`` with one matrix ``E`` drawn with ``generator`` for every row (evaluation's draws)."""
        with torch.no_grad():
            matrix = self.noise.draw(generator)
        return self.perturb(dist, matrix)

    def draw(
        self, obs: torch.Tensor, mask: torch.Tensor | None, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(action [B, A], its log-probability [B]) at ``obs`` with one matrix drawn for every row."""
        return draw_through(self, obs, mask, generator)

    @staticmethod
    def perturb(dist: StateDependentNormal, matrices: torch.Tensor) -> torch.Tensor:
        """``mean + z @ E`` ([B, A]) with the held ``matrices`` ([B, L, A], one per env, or [L, A])."""
        return dist.normal.loc + StateDependentNoise.perturbation(dist.latent, matrices)

    @staticmethod
    def mode(dist: StateDependentNormal) -> torch.Tensor:
        """The mean of each row ([B, A]), unclipped like a sample."""
        return dist.normal.loc

    @staticmethod
    def log_prob(dist: StateDependentNormal, action: torch.Tensor) -> torch.Tensor:
        return dist.normal.log_prob(action).sum(-1)

    @staticmethod
    def entropy(dist: StateDependentNormal) -> torch.Tensor:
        return dist.normal.entropy().sum(-1)

    @staticmethod
    def kl(old: StateDependentNormal, new: StateDependentNormal) -> torch.Tensor:
        """KL(old || new) of each row ([B]) between the two Gaussians given the features."""
        return kl_divergence(old.normal, new.normal).sum(-1)


def squashed_log_prob(normal: Normal, unit: torch.Tensor) -> torch.Tensor:
    """[B] log-density of ``unit`` ([B, A], a tanh-squashed action in (-1, 1)) when its pre-tanh value has the
    Gaussian ``normal``: as Stable-Baselines3's TanhBijector computes it, the pre-tanh value recovered by atanh
    of ``unit`` clipped one float epsilon inside (-1, 1), less ``log(1 - tanh(u)^2 + EPSILON)`` per dimension."""
    eps = torch.finfo(unit.dtype).eps
    clipped = unit.clamp(-1.0 + eps, 1.0 - eps)
    gaussian = 0.5 * (clipped.log1p() - (-clipped).log1p())
    correction = torch.log(1.0 - torch.tanh(gaussian).square() + EPSILON)
    return normal.log_prob(gaussian).sum(-1) - correction.sum(-1)


class SquashedStateDependentActor(nn.Module):
    """SAC's and TQC's actor with gSDE: ``tanh(mean + z @ E)`` in the Box bounds, ``z`` the last hidden features
    of ``net`` over ``encoder``, the mean clipped to [-2, 2]. The same call as
    :class:`rlcli.models.actors.SquashedGaussianActor`; the features are learned through the noise too
    (SB3's SAC: ``learn_features=True``)."""

    def __init__(self, encoder: Encoder, net: nn.Sequential, space: spaces.Box, noise: StateDependentNoise):
        super().__init__()
        self.encoder = encoder
        self.net = net
        self.noise = noise
        self.rescale = _Rescale(space)

    def forward(
        self,
        obs: torch.Tensor,
        generator: torch.Generator | None = None,
        *,
        deterministic: bool = False,
        noise: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(action in bounds [B, A], log_prob [B]) for normalized ``obs`` [B, *obs]: ``deterministic`` takes the
        squashed mean; ``noise``, when given, is the held matrices ([B, L, A] or [L, A]); otherwise one matrix
        is drawn with ``generator`` for the whole batch (Stable-Baselines3 draws one per gradient step)."""
        latent, mean = _trunk_and_mean(self.net, self.encoder(obs))
        mean = F.hardtanh(mean, -CLIP_MEAN, CLIP_MEAN)
        normal = Normal(mean, self.noise.scale(latent), validate_args=False)
        if deterministic:
            pre_tanh = mean
        else:
            matrices = self.noise.draw(generator) if noise is None else noise
            pre_tanh = mean + StateDependentNoise.perturbation(latent, matrices)
        unit = torch.tanh(pre_tanh)
        return self.rescale(unit), squashed_log_prob(normal, unit)


class NoiseSchedule:
    """When a collecting gSDE policy draws its noise matrices, and the matrices it holds: one [L, A] matrix per
    env, drawn at the start of each rollout of ``rollout_steps`` steps and, with ``sample_freq`` >= 1, every
    ``sample_freq`` steps into it (Stable-Baselines3's ``reset_noise`` calls in ``collect_rollouts``), with the
    generator the collector acts with; a change in the number of envs draws afresh. Its state (the steps taken
    and the matrices) is saved with the algorithm's, so that a resumed run draws what it would have."""

    def __init__(self, noise: StateDependentNoise, *, rollout_steps: int, sample_freq: int):
        self.noise = noise
        self.rollout_steps, self.sample_freq = rollout_steps, sample_freq
        self.steps = 0
        self.matrices: torch.Tensor | None = None

    def __call__(self, envs: int, generator: torch.Generator) -> torch.Tensor:
        """The matrices ([envs, L, A]) for the next collected step, drawn first when one is due."""
        into = self.steps % self.rollout_steps
        due = into == 0 or (self.sample_freq > 0 and into % self.sample_freq == 0)
        if due or self.matrices is None or self.matrices.shape[0] != envs:
            with torch.no_grad():
                self.matrices = self.noise.draw(generator, envs)
        self.steps += 1
        return self.matrices

    def state_dict(self) -> dict:
        return {"steps": self.steps, "matrices": self.matrices}

    def load_state_dict(self, state: dict) -> None:
        self.steps, self.matrices = state["steps"], state["matrices"]
