"""Ensembles of MLPs evaluated as one batched module: weights stacked as ``[E, in, out]``.

Every layer of E members is one ``torch.baddbmm`` call, so SAC's twin critics cost
one kernel per layer and REDQ's ten critics little more than two; a Python loop
over E separate MLPs would pay E kernel launches and E autograd nodes per layer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from rlcli.models.batch_renorm import BatchRenorm, Renorm
from rlcli.models.mlp import ACTIVATIONS


class EnsembleLinear(nn.Module):
    """E independent affine maps ``x[e] @ weight[e] + bias[e]``.

    Each member is initialised as ``nn.Linear`` would be (uniform in
    ``+-1/sqrt(in)`` for weights and biases), drawing from the global generator
    in turn, so members start different from each other.
    """

    def __init__(self, members: int, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(members, in_features, out_features))
        self.bias = nn.Parameter(torch.empty(members, 1, out_features))
        bound = 1 / math.sqrt(in_features)
        with torch.no_grad():
            for member in range(members):
                self.weight[member].uniform_(-bound, bound)
                self.bias[member].uniform_(-bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[E, B, in] -> [E, B, out]."""
        return torch.baddbmm(self.bias, x, self.weight)


class EnsembleMLP(nn.Module):
    """E MLPs ``in -> hidden... -> out`` with no activation after the last layer, run together; with
    ``renorm``, a :class:`~rlcli.models.batch_renorm.BatchRenorm` layer before each linear one."""

    def __init__(
        self,
        members: int,
        in_features: int,
        hidden_sizes: Sequence[int],
        out_features: int,
        *,
        activation: str,
        renorm: Renorm | None = None,
    ):
        super().__init__()
        self.members = members
        sizes = [in_features, *hidden_sizes, out_features]
        layers: list[nn.Module] = []
        for index, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            if renorm is not None:
                # CrossQ's critics: batch renormalization before every linear layer, per member.
                layers.append(
                    BatchRenorm(fan_in, members=members, momentum=renorm.momentum, eps=renorm.eps, warmup=renorm.warmup)
                )
            layers.append(EnsembleLinear(members, fan_in, fan_out))
            if index < len(sizes) - 2:
                layers.append(ACTIVATIONS[activation]())
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[B, in] (shared by every member) or [E, B, in] -> [E, B, out]."""
        if x.dim() == 2:
            x = x.unsqueeze(0).expand(self.members, *x.shape)
        return self.layers(x)


class AgentsApart(nn.Module):
    """A team group's MLP with each agent's own weights (``[algo] share_params = false``): ``len(nets)`` MLPs of
    one shape, each initialised as it was built, run as one batched ensemble (a ``baddbmm`` per layer).

    Rows come agent after agent (``[..., agents]`` flattened, as a group's ``N * agents`` columns and its
    minibatches of whole frames are laid out): row ``r`` goes through agent ``r % agents``'s weights.
    """

    def __init__(self, nets: Sequence[nn.Sequential]):
        super().__init__()
        self.agents = len(nets)
        layers: list[nn.Module] = []
        for index, module in enumerate(nets[0]):
            if isinstance(module, nn.Linear):
                layer = EnsembleLinear(self.agents, module.in_features, module.out_features)
                linears = [linear for linear in (net[index] for net in nets) if isinstance(linear, nn.Linear)]
                assert len(linears) == self.agents, "MLPs of one shape"
                with torch.no_grad():
                    layer.weight.copy_(torch.stack([linear.weight.t() for linear in linears]))
                    layer.bias.copy_(torch.stack([linear.bias[None] for linear in linears]))
                layers.append(layer)
            else:
                layers.append(module)
        self.layers = nn.Sequential(*layers)

    def member(self, agent: int) -> nn.Sequential:
        """Agent ``agent``'s own MLP, as plain layers (what its exported file holds)."""
        layers: list[nn.Module] = []
        for module in self.layers:
            if isinstance(module, EnsembleLinear):
                linear = nn.Linear(module.weight.shape[1], module.weight.shape[2])
                with torch.no_grad():
                    linear.weight.copy_(module.weight[agent].t())
                    linear.bias.copy_(module.bias[agent, 0])
                layers.append(linear)
            else:
                layers.append(module)
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[*B, in] -> [*B, out], ``prod(B)`` a multiple of the agents, agent after agent."""
        lead = x.shape[:-1]
        out = self.layers(x.reshape(-1, self.agents, x.shape[-1]).transpose(0, 1))
        return out.transpose(0, 1).reshape(*lead, out.shape[-1])
