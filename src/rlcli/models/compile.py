"""``run.compile``: every network of an agent compiled in place."""

from __future__ import annotations

import torch
from torch import nn

from rlcli.models.ensemble import EnsembleMLP


def compile_networks(agent: nn.Module, mode: str) -> int:
    """Compile every network of ``agent`` in place with ``torch.compile(mode=mode)``; returns how many.

    The networks are the MLPs (and ensembles of them) that acting, the losses and the targets
    call: each ``nn.Sequential`` and ensemble MLP, not the modules around them, whose
    distributions and statistics would break the graph. Compiling in place keeps every
    ``state_dict`` key, so checkpoints of compiled and eager runs are the same files.
    """
    count = 0
    for module in agent.modules():
        if isinstance(module, (nn.Sequential, EnsembleMLP)):
            # The forward, overridden on the instance: acting, losses and their backward all call it (mypy
            # refuses any assignment to a method; this one is the point).
            module.forward = torch.compile(  # type: ignore[method-assign]
                module.forward, mode=None if mode == "default" else mode, dynamic=False
            )
            count += 1
    return count
