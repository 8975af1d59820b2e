"""Multi-layer perceptrons built from a width list and an activation name."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from rlcli.config.schema import NetworkConfig


class _SigmoidTanh(torch.autograd.Function):
    """tanh(x) as 2 * sigmoid(2x) - 1, with tanh's own backward from the output."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        y = torch.sigmoid(x * 2).mul_(2).sub_(1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad, y)


class Tanh(nn.Module):
    """``nn.Tanh``, computed on a CPU as ``2 * sigmoid(2x) - 1``: torch's CPU tanh (a vectorized
    libm-accurate kernel) takes about 4 times as long as its sigmoid, and a policy's hidden layers
    spend more time in it than in their matrix products (measured: [512, 64] float32, one thread,
    147 us against 42; forward and backward, 199 against about 60). The result differs from
    ``torch.tanh`` by at most 2e-7. For small inputs and elsewhere (CUDA), ``torch.tanh``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Below a few thousand elements (acting on a few envs) the three extra kernel calls cost more.
        # An exported policy (rlcli export) takes torch.tanh at every batch size: its batch is symbolic.
        if x.device.type != "cpu" or torch.compiler.is_exporting() or x.numel() < 8192:
            return torch.tanh(x)
        if torch.is_grad_enabled() and x.requires_grad:
            return _SigmoidTanh.apply(x)
        return torch.sigmoid(x * 2).mul_(2).sub_(1)


ACTIVATIONS: dict[str, type[nn.Module]] = {
    "tanh": Tanh,
    "relu": nn.ReLU,
    "elu": nn.ELU,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "leaky_relu": nn.LeakyReLU,
}


def mlp(
    in_features: int,
    hidden_sizes: Sequence[int],
    out_features: int,
    *,
    activation: str,
    orthogonal: bool,
    out_gain: float,
) -> nn.Sequential:
    """An MLP ``in -> hidden... -> out`` with no activation after the last layer.

    With ``orthogonal``, hidden layers get orthogonal weights with gain sqrt(2)
    and zero bias, the output layer gain ``out_gain`` (the initialisation of
    OpenAI baselines' PPO that tuned presets assume).
    """
    layers: list[nn.Module] = []
    sizes = [in_features, *hidden_sizes]
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        layers += [_linear(fan_in, fan_out, orthogonal, math.sqrt(2)), ACTIVATIONS[activation]()]
    layers.append(_linear(sizes[-1], out_features, orthogonal, out_gain))
    return nn.Sequential(*layers)


def _linear(fan_in: int, fan_out: int, orthogonal: bool, gain: float) -> nn.Linear:
    layer = nn.Linear(fan_in, fan_out)
    if orthogonal:
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
    return layer


def policy_mlp(in_features: int, network: NetworkConfig, out_features: int) -> nn.Sequential:
    """The policy's MLP of ``[network]``: ``policy_sizes`` hidden layers with its activation and init, and
    an output layer of gain 0.01, so that a new policy is near uniform (its actions near the middle of
    their range), as the PPO implementation details have it (Huang et al., 2022)."""
    return mlp(
        in_features,
        network.policy_sizes,
        out_features,
        activation=network.activation,
        orthogonal=network.init == "orthogonal",
        out_gain=0.01,
    )
