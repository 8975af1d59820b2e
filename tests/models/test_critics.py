"""Critics: V(s), the Q ensemble over (observation, action) pairs, and its regression onto TD targets
against a plain loop over members and rows."""

import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.bench.floors.actor_critic import ensemble_member
from rlcli.models.critics import QEnsemble, ValueCritic, critic_regression
from rlcli.models.encoders import Flat


def test_value_critic_squeezes_its_one_output():
    critic = ValueCritic(nn.Linear(3, 1))
    assert critic(torch.randn(4, 3)).shape == (4,) and critic(torch.randn(2, 5, 3)).shape == (2, 5)


def test_q_ensemble_scores_each_pair_under_every_member():
    torch.manual_seed(3)
    critic = QEnsemble(2, Flat((3,)), 1, [8], activation="relu")
    obs, action = torch.randn(5, 3), torch.randn(5, 1)
    q = critic(obs, action)
    assert q.shape == (2, 5) and critic.members == 2
    for e in range(2):
        torch.testing.assert_close(q[e], ensemble_member(critic.net, e)(torch.cat([obs, action], -1)).squeeze(-1))


def test_frozen_keeps_gradients_out_of_the_weights_but_not_the_inputs():
    critic = QEnsemble(2, Flat((3,)), 1, [8], activation="relu")
    action = torch.randn(5, 1, requires_grad=True)
    with critic.frozen():
        critic(torch.randn(5, 3), action).sum().backward()
    assert action.grad is not None and all(p.grad is None for p in critic.parameters())
    assert all(p.requires_grad for p in critic.parameters())


@pytest.mark.parametrize("weighted", [False, True])
def test_regression_is_half_the_sum_over_members_of_the_weighted_mean_square(weighted):
    g = torch.Generator().manual_seed(0)
    q, target = torch.randn(3, 6, generator=g), torch.randn(6, generator=g)
    weight = torch.rand(6, generator=g)
    batch = TensorDict({keys.WEIGHT: weight} if weighted else {}, batch_size=[6])
    terms = critic_regression(q, target, batch)
    loss, td_abs = 0.0, []
    for e in range(3):
        for b in range(6):
            w = float(weight[b]) if weighted else 1.0
            loss += 0.5 * w * float(q[e, b] - target[b]) ** 2 / 6
    for b in range(6):
        td_abs.append(sum(abs(float(q[e, b] - target[b])) for e in range(3)) / 3)
    assert float(terms["loss/critic"]) == pytest.approx(loss, rel=1e-5)
    torch.testing.assert_close(terms["td_error"], torch.tensor(td_abs))
    assert float(terms["stats/q_mean"]) == pytest.approx(float(q.mean()), rel=1e-5)
    assert float(terms["stats/td_abs"]) == pytest.approx(sum(td_abs) / 6, rel=1e-5)
