"""Multi-layer perceptrons built from a width list and an activation name."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
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


def compile_networks(agent: nn.Module, mode: str) -> int:
    """Compile every network of ``agent`` in place with ``torch.compile(mode=mode)``; returns how many.

    The networks are the MLPs (and ensembles of them) that acting, the losses and the targets
    call: each ``nn.Sequential`` and ensemble MLP, not the modules around them, whose
    distributions and statistics would break the graph. Compiling in place keeps every
    ``state_dict`` key, so checkpoints of compiled and eager runs are the same files.
    """
    from rlcli.models.ensemble import EnsembleMLP

    count = 0
    for module in agent.modules():
        if isinstance(module, (nn.Sequential, EnsembleMLP)):
            # The forward, overridden on the instance: acting, losses and their backward all call it.
            module.forward = torch.compile(module.forward, mode=None if mode == "default" else mode, dynamic=False)
            count += 1
    return count
