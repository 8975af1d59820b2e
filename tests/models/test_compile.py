"""``run.compile``: which networks of an agent are compiled in place, and that nothing else changes."""

import torch
from torch import nn

from rlcli.models.compile import compile_networks
from rlcli.models.critics import QEnsemble
from rlcli.models.encoders import Flat
from rlcli.models.mlp import mlp


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.actor = mlp(3, [8], 2, activation="tanh", orthogonal=True, out_gain=0.01)
        self.critic = QEnsemble(2, Flat((3,)), 2, [8], activation="relu")
        self.head = nn.Linear(2, 2)


def test_every_mlp_and_ensemble_mlp_is_compiled_in_place_and_keys_stay(monkeypatch):
    seen = []

    def fake_compile(function, mode=None, dynamic=None):
        seen.append((function.__self__, mode, dynamic))
        return function

    monkeypatch.setattr(torch, "compile", fake_compile)
    agent = Agent()
    keys = list(agent.state_dict())
    # The ensemble's own layers are an nn.Sequential too, and are wrapped inside it.
    assert compile_networks(agent, "reduce-overhead") == 3
    assert {id(module) for module, _, _ in seen} == {id(agent.actor), id(agent.critic.net), id(agent.critic.net.layers)}
    assert {(mode, dynamic) for _, mode, dynamic in seen} == {("reduce-overhead", False)}
    # The forward is replaced on the instance, so every state_dict key is the eager one.
    assert list(agent.state_dict()) == keys and "forward" in vars(agent.actor)


def test_default_mode_is_torchs_own_default(monkeypatch):
    modes = []
    monkeypatch.setattr(torch, "compile", lambda function, mode=None, dynamic=None: modes.append(mode) or function)
    compile_networks(Agent(), "default")
    assert modes == [None, None, None]
