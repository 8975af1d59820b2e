"""Critics: state values V(s), ensembles of action values Q(s, a), and the regression of an
ensemble onto TD targets."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import torch
from torch import nn

from rlcli import keys
from rlcli.models.batch_renorm import Renorm
from rlcli.models.ensemble import EnsembleMLP

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.models.encoders import Encoder


class ValueCritic(nn.Module):
    """V(s): an MLP with one output, squeezed to shape ``[*batch]``."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs).squeeze(-1)


class QEnsemble(nn.Module):
    """E critics Q(s, a), each an MLP over the concatenated encoded observation and action, with one
    output (an action value) or ``outputs`` of them (TQC: quantiles of the return's distribution), and
    with ``renorm`` batch renormalization before each layer (CrossQ).

    The members share one encoder (as Stable-Baselines3's critics share their features
    extractor): a CNN runs once per batch, not once per member.
    """

    def __init__(
        self,
        members: int,
        encoder: Encoder,
        act_dim: int,
        hidden_sizes: Sequence[int],
        *,
        activation: str,
        outputs: int = 1,
        renorm: Renorm | None = None,
    ):
        super().__init__()
        self.encoder = encoder
        self.outputs = outputs
        self.net = EnsembleMLP(
            members, encoder.out_features + act_dim, hidden_sizes, outputs, activation=activation, renorm=renorm
        )

    @contextmanager
    def frozen(self) -> Iterator[None]:
        """Evaluate without gradients into the critics' own weights (an actor's loss), while
        gradients still flow through the inputs."""
        # Walked once: a module walk per step costs more than the step's small kernels.
        if not hasattr(self, "_params"):
            self._params = list(self.parameters())
        params = [p for p in self._params if p.requires_grad]
        for param in params:
            param.requires_grad_(False)
        try:
            yield
        finally:
            for param in params:
                param.requires_grad_(True)

    @property
    def members(self) -> int:
        return self.net.members

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Q-values [E, B] (or with ``outputs`` > 1, [E, B, outputs]) of normalized ``obs`` [B, *obs] and
        ``action`` [B, act_dim] under every member."""
        out = self.net(torch.cat([self.encoder(obs), action], -1))
        return out.squeeze(-1) if self.outputs == 1 else out


def critic_regression(q: torch.Tensor, target: torch.Tensor, batch: TensorDict) -> dict[str, torch.Tensor]:
    """``0.5 * sum_e mean_b w_b (Q_e - y)^2`` for a critic ensemble ``q`` [E, B] and targets [B].

    Reads ``weight`` [B] (importance weights) when present. Returns ``loss/critic``,
    ``stats/q_mean``, ``stats/td_abs`` and ``td_error`` ([B], detached, the mean |TD| over
    critics, for priorities).
    """
    td = q - target
    weight = batch.get(keys.WEIGHT, None)
    per_critic = td.square().mean(1) if weight is None else (weight * td.square()).mean(1)
    distance = td.detach().abs()
    return {
        "loss/critic": 0.5 * per_critic.sum(),
        "stats/q_mean": q.detach().mean(),
        "stats/td_abs": distance.mean(),
        "td_error": distance.mean(0),
    }
