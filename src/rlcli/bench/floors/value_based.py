"""Bare-torch floors of the value-based family: QR-DQN's gradient step written plainly, with the
quantile Huber loss pair by pair as sb3-contrib writes it (TQC's floor takes that loss too)."""

from __future__ import annotations

import copy

import torch
from tensordict import TensorDict

from rlcli import keys


def pairwise_quantile_loss(current: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The quantile Huber loss of every pair, as sb3-contrib's ``quantile_huber_loss`` writes it:
    ``current`` [..., N], ``target`` [..., M] -> [..., N, M]."""
    n = current.shape[-1]
    tau = ((torch.arange(n, dtype=torch.float32) + 0.5) / n).unsqueeze(-1)
    delta = target.unsqueeze(-2) - current.unsqueeze(-1)
    size = delta.abs()
    huber = torch.where(size > 1, size - 0.5, 0.5 * delta**2)
    return (tau - (delta.detach() < 0).float()).abs() * huber


class BareQRDQN:
    """QR-DQN's gradient step: the online and target quantile networks as plain Sequentials, the
    target's greedy action, the pairwise loss summed over the estimates, one fused Adam step."""

    def __init__(self, algo, gamma: float):
        q = algo.agent.q
        self.net, self.actions, self.count = copy.deepcopy(q.net), q.actions, q.count
        self.target = copy.deepcopy(self.net).requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=1e-3, fused=True)
        self.gamma = gamma

    def step(self, batch: TensorDict) -> None:
        size = batch.batch_size[0]
        with torch.no_grad():
            next_q = self.target(batch[keys.NEXT_INPUT]).view(size, self.actions, self.count)
            best = next_q.mean(-1).argmax(-1)
            next_q = next_q[torch.arange(size), best]
            alive = (~batch[keys.TERMINATED]).float().unsqueeze(-1)
            target = batch[keys.REWARD].unsqueeze(-1) + self.gamma * alive * next_q
        current = self.net(batch[keys.INPUT]).view(size, self.actions, self.count)[
            torch.arange(size), batch[keys.ACTION]
        ]
        loss = pairwise_quantile_loss(current, target).sum(-2).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
