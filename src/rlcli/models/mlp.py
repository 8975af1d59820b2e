"""Multi-layer perceptrons built from a width list and an activation name."""

from __future__ import annotations

import math
from collections.abc import Sequence

from torch import nn

ACTIVATIONS: dict[str, type[nn.Module]] = {
    "tanh": nn.Tanh,
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
