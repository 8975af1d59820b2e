"""The batched MLP ensemble against E separate MLPs."""

import torch

from rlcli.bench.floors.actor_critic import ensemble_member
from rlcli.models.ensemble import EnsembleMLP


def test_ensemble_equals_separate_mlps_with_the_same_weights():
    torch.manual_seed(0)
    ensemble = EnsembleMLP(5, 7, [16, 8], 3, activation="relu")
    x = torch.randn(11, 7)
    out = ensemble(x)
    assert out.shape == (5, 11, 3)
    for member in range(5):
        torch.testing.assert_close(out[member], ensemble_member(ensemble, member)(x))
    # Per-member inputs give per-member outputs.
    xs = torch.randn(5, 11, 7)
    per_member = ensemble(xs)
    for member in range(5):
        torch.testing.assert_close(per_member[member], ensemble_member(ensemble, member)(xs[member]))


def test_gradients_match_separate_mlps():
    torch.manual_seed(1)
    ensemble = EnsembleMLP(3, 4, [8], 1, activation="tanh")
    x = torch.randn(6, 4)
    ensemble(x).square().sum().backward()
    for member in range(3):
        single = ensemble_member(ensemble, member)
        single(x).square().sum().backward()
        torch.testing.assert_close(ensemble.layers[0].weight.grad[member], single[0].weight.grad.T)


def test_members_start_different_and_like_nn_linear():
    torch.manual_seed(2)
    ensemble = EnsembleMLP(10, 64, [64], 1, activation="relu")
    first = ensemble.layers[0].weight
    assert not torch.allclose(first[0], first[1])
    # nn.Linear's default: uniform in +-1/sqrt(fan_in).
    assert first.abs().max() <= 1 / 8 and first.std() > 0.8 * (1 / 8) / 3**0.5
