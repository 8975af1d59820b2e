"""Continuous-control actors: the squashed Gaussian's density and the bounds."""

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlcli.models.actors import DeterministicActor, SquashedGaussianActor, squashed_gaussian


def test_squashed_log_prob_matches_a_numerical_change_of_variables():
    g = torch.Generator().manual_seed(0)
    mean = torch.randn(6, 3, generator=g, dtype=torch.float64)
    log_std = torch.randn(6, 3, generator=g, dtype=torch.float64) * 0.5
    noise = torch.randn(6, 3, generator=g, dtype=torch.float64)
    action, log_prob = squashed_gaussian(mean, log_std, noise)
    for row in range(6):
        pre_tanh = mean[row] + log_std[row].exp() * noise[row]
        gaussian = torch.distributions.Normal(mean[row], log_std[row].exp()).log_prob(pre_tanh).sum()
        # log |det d tanh(u) / du| from the Jacobian itself, not from a formula.
        jacobian = torch.autograd.functional.jacobian(torch.tanh, pre_tanh)
        log_det = torch.linalg.slogdet(jacobian).logabsdet
        torch.testing.assert_close(log_prob[row], gaussian - log_det)
        torch.testing.assert_close(action[row], torch.tanh(pre_tanh))


def test_squashed_log_prob_stays_finite_where_tanh_saturates():
    mean = torch.tensor([[30.0, -30.0]])
    action, log_prob = squashed_gaussian(mean, torch.zeros(1, 2), torch.zeros(1, 2))
    assert torch.isfinite(log_prob).all()
    assert action.abs().max() <= 1.0


def test_actions_are_rescaled_into_the_box_bounds():
    space = gym.spaces.Box(low=np.array([-2.0, 0.0], np.float32), high=np.array([2.0, 10.0], np.float32))
    net = nn.Linear(3, 4)
    g = torch.Generator().manual_seed(1)
    action, _ = SquashedGaussianActor(nn.Identity(), net, space)(torch.randn(500, 3) * 10, g)
    assert (action[:, 0].abs() <= 2.0).all() and (action[:, 1] >= 0).all() and (action[:, 1] <= 10).all()
    assert action[:, 1].max() > 8 and action[:, 1].min() < 2
    det = DeterministicActor(nn.Identity(), nn.Linear(3, 2), space)(torch.randn(500, 3) * 10)
    assert (det[:, 0].abs() <= 2.0).all() and (det[:, 1] >= 0).all() and (det[:, 1] <= 10).all()


def test_deterministic_mode_takes_the_mean():
    space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    net = nn.Linear(1, 2)
    with torch.no_grad():
        net.weight.zero_()
        net.bias.copy_(torch.tensor([0.5, 0.0]))
    action, _ = SquashedGaussianActor(nn.Identity(), net, space)(torch.zeros(4, 1), deterministic=True)
    torch.testing.assert_close(action, torch.full((4, 1), float(np.tanh(0.5))))
