"""Policy heads: the distributions they build, their shortcuts for log-probabilities and entropy
against torch.distributions and the textbook formulas, modes, and samples drawn with the
generator they are given."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn
from torch.distributions import Bernoulli, Categorical, Independent, Normal

from rlcli.models.heads import BernoulliHead, CategoricalHead, GaussianHead, MultiCategoricalHead


class Fixed(nn.Module):
    """A 'network' whose output is given: the rows of ``out`` for a batch of their number."""

    def __init__(self, out: torch.Tensor):
        super().__init__()
        self.out = out

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        assert obs.shape[0] == self.out.shape[0]
        return self.out


def random_logits(rows: int, actions: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, actions, generator=g, dtype=torch.float64) * 3


def test_categorical_log_prob_and_entropy_match_torch_distributions():
    logits = random_logits(64, 5)
    head = CategoricalHead(Fixed(logits))
    dist = head(torch.zeros(64, 3))
    reference = Categorical(logits=logits)
    actions = torch.arange(64) % 5
    torch.testing.assert_close(head.log_prob(dist, actions), reference.log_prob(actions))
    torch.testing.assert_close(head.entropy(dist), reference.entropy())
    # And against the definitions, row by row.
    for row in range(4):
        p = torch.softmax(logits[row], -1)
        torch.testing.assert_close(head.log_prob(dist, actions)[row], p[actions[row]].log())
        torch.testing.assert_close(head.entropy(dist)[row], -(p * p.log()).sum())


def test_categorical_log_prob_stays_finite_for_an_action_the_policy_almost_never_takes():
    logits = torch.tensor([[0.0, -200.0, 5.0]])
    head = CategoricalHead(Fixed(logits))
    dist = head(torch.zeros(1, 1))
    value = head.log_prob(dist, torch.tensor([1]))
    assert torch.isfinite(value).all() and value.item() < -200
    assert torch.isfinite(head.entropy(dist)).all()


def test_categorical_mode_is_the_most_probable_action():
    logits = random_logits(32, 4)
    head = CategoricalHead(Fixed(logits))
    mode = head.mode(head(torch.zeros(32, 1)))
    assert mode.dtype == torch.int64 and mode.shape == (32,)
    assert torch.equal(mode, logits.argmax(-1))


def test_categorical_samples_follow_the_probabilities_and_the_generator():
    probs = torch.tensor([0.1, 0.2, 0.7], dtype=torch.float64)
    logits = probs.log().expand(20000, 3)
    head = CategoricalHead(Fixed(logits))
    dist = head(torch.zeros(20000, 1))
    first = head.sample(dist, torch.Generator().manual_seed(1))
    again = head.sample(dist, torch.Generator().manual_seed(1))
    other = head.sample(dist, torch.Generator().manual_seed(2))
    assert first.shape == (20000,) and first.dtype == torch.int64
    assert torch.equal(first, again) and not torch.equal(first, other)
    frequencies = torch.bincount(first, minlength=3).double() / 20000
    # Seeded: the same frequencies every run, within 3 standard errors of the probabilities.
    torch.testing.assert_close(frequencies, probs, atol=0.01, rtol=0)


def test_categorical_sampling_leaves_the_global_generator_alone():
    head = CategoricalHead(Fixed(random_logits(8, 3)))
    dist = head(torch.zeros(8, 1))
    before = torch.get_rng_state()
    head.sample(dist, torch.Generator().manual_seed(0))
    assert torch.equal(torch.get_rng_state(), before)


BOX = gym.spaces.Box(low=np.array([-2.0, -1.0, 0.0], np.float32), high=np.array([2.0, 1.0, 1.0], np.float32))


def gaussian(rows: int, log_std_init: float = -0.5, seed: int = 0) -> tuple[GaussianHead, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    mean = torch.randn(rows, 3, generator=g)
    return GaussianHead(Fixed(mean), BOX, log_std_init), mean


def test_gaussian_log_std_is_one_parameter_per_action_dimension_at_its_initial_value():
    head, _ = gaussian(4, log_std_init=-0.7)
    assert isinstance(head.log_std, nn.Parameter) and head.log_std.shape == (3,)
    assert torch.equal(head.log_std.data, torch.full((3,), -0.7))
    assert any(p is head.log_std for p in head.parameters())


def test_gaussian_is_a_normal_with_the_net_output_as_mean_and_a_shared_std():
    head, mean = gaussian(16)
    with torch.no_grad():
        head.log_std.copy_(torch.tensor([-1.0, 0.0, 0.5]))
    dist = head(torch.zeros(16, 5))
    assert isinstance(dist, Normal)
    torch.testing.assert_close(dist.loc, mean)
    torch.testing.assert_close(dist.scale, torch.tensor([-1.0, 0.0, 0.5]).exp().expand(16, 3))
    torch.testing.assert_close(head.mode(dist), mean)


def test_gaussian_log_prob_and_entropy_sum_over_action_dimensions():
    head, mean = gaussian(32)
    with torch.no_grad():
        head.log_std.copy_(torch.tensor([-1.0, 0.0, 0.5]))
    dist = head(torch.zeros(32, 5))
    g = torch.Generator().manual_seed(3)
    # Actions outside the box too: samples are stored unclipped and their density is exact.
    actions = mean + torch.randn(32, 3, generator=g) * 4
    std = head.log_std.detach().exp()
    reference = Independent(Normal(mean, std.expand(32, 3)), 1)
    torch.testing.assert_close(head.log_prob(dist, actions), reference.log_prob(actions))
    torch.testing.assert_close(head.entropy(dist), reference.entropy())
    for row in range(3):
        z = (actions[row] - mean[row]) / std
        by_hand = (-0.5 * z**2 - std.log() - 0.5 * math.log(2 * math.pi)).sum()
        torch.testing.assert_close(head.log_prob(dist, actions)[row], by_hand)
        torch.testing.assert_close(head.entropy(dist)[row], (0.5 * math.log(2 * math.pi * math.e) + std.log()).sum())


def test_gaussian_log_prob_trains_the_log_std():
    head, mean = gaussian(8)
    dist = head(torch.zeros(8, 5))
    # Actions 3 from the mean: d log N / d log std = z**2 - 1 per row and dimension, z = 3 / std,
    # positive here (a wider policy makes them likelier).
    head.log_prob(dist, mean + 3.0).sum().backward()
    z = 3.0 / math.exp(-0.5)
    torch.testing.assert_close(head.log_std.grad, torch.full((3,), 8 * (z**2 - 1)))


def test_gaussian_samples_are_mean_plus_std_times_the_generators_noise():
    rows = 64
    head, mean = gaussian(rows)
    dist = head(torch.zeros(rows, 5))
    sample = head.sample(dist, torch.Generator().manual_seed(5))
    noise = torch.randn(rows, 3, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(sample, mean + head.log_std.detach().exp() * noise)
    assert sample.shape == (rows, 3) and sample.dtype == torch.float32
    assert not torch.equal(sample, head.sample(dist, torch.Generator().manual_seed(6)))


def test_gaussian_samples_are_not_clipped_to_the_box():
    head, _ = gaussian(4000)
    sample = head.sample(head(torch.zeros(4000, 5)), torch.Generator().manual_seed(0))
    assert (sample[:, 2] < BOX.low[2]).any() and (sample[:, 2] > BOX.high[2]).any()


# Action masks and the heads of MultiDiscrete and MultiBinary actions.


def random_mask(rows: int, actions: int, seed: int = 1) -> torch.Tensor:
    """[rows, actions] bool with at least one allowed action per row."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(rows, actions, generator=g) < 0.5
    mask[torch.arange(rows), torch.randint(actions, (rows,), generator=g)] = True
    return mask


def test_a_masked_categorical_is_the_softmax_over_the_allowed_actions_alone():
    logits, mask = random_logits(64, 6).float(), random_mask(64, 6)
    head = CategoricalHead(Fixed(logits))
    dist = head(torch.zeros(64, 1), mask)
    assert (dist.probs[~mask] == 0).all()
    for row in range(64):
        allowed = mask[row].nonzero().squeeze(1)
        p = torch.softmax(logits[row, allowed], -1)
        # Log-probability of each allowed action: the renormalized softmax's.
        one = CategoricalHead(Fixed(logits[row : row + 1]))
        for k, action in enumerate(allowed):
            value = one.log_prob(one(torch.zeros(1, 1), mask[row : row + 1]), action[None])
            torch.testing.assert_close(value[0], p[k].log())
        # Entropy over the allowed actions only.
        torch.testing.assert_close(head.entropy(dist)[row], -(p * p.log()).sum())
    assert torch.isfinite(head.entropy(dist)).all()


def test_a_masked_categorical_never_samples_nor_picks_a_forbidden_action():
    logits, mask = random_logits(256, 5).float(), random_mask(256, 5, seed=3)
    # The forbidden actions are the network's favourites: the mask alone keeps them out.
    logits = torch.where(mask, logits, logits + 100.0)
    head = CategoricalHead(Fixed(logits))
    dist = head(torch.zeros(256, 1), mask)
    for seed in range(5):
        action = head.sample(dist, torch.Generator().manual_seed(seed))
        assert mask[torch.arange(256), action].all()
    assert mask[torch.arange(256), head.mode(dist)].all()


def test_an_unmasked_categorical_computes_exactly_what_it_did():
    logits = random_logits(32, 4).float()
    head = CategoricalHead(Fixed(logits))
    plain, unmasked = Categorical(logits=logits), head(torch.zeros(32, 1), None)
    assert torch.equal(unmasked.logits, plain.logits)
    actions = torch.arange(32) % 4
    assert torch.equal(head.log_prob(unmasked, actions), plain.logits.gather(-1, actions[:, None]).squeeze(-1))
    assert torch.equal(head.entropy(unmasked), -(plain.logits.exp() * plain.logits).sum(-1))


def test_multi_categorical_sums_independent_sub_actions_under_flat_masks():
    space = gym.spaces.MultiDiscrete([3, 4])
    logits, mask = random_logits(16, 7).float(), random_mask(16, 7)
    mask[:, :3][~mask[:, :3].any(1)] = True
    mask[:, 3:][~mask[:, 3:].any(1)] = True
    head = MultiCategoricalHead(Fixed(logits), space)
    dist = head(torch.zeros(16, 1), mask)
    first = Categorical(logits=torch.where(mask[:, :3], logits[:, :3], -1e8))
    second = Categorical(logits=torch.where(mask[:, 3:], logits[:, 3:], -1e8))
    action = head.sample(dist, torch.Generator().manual_seed(0))
    assert action.shape == (16, 2) and action.dtype == torch.int64
    assert mask[:, :3].gather(1, action[:, :1]).all() and mask[:, 3:].gather(1, action[:, 1:]).all()
    torch.testing.assert_close(
        head.log_prob(dist, action), first.log_prob(action[:, 0]) + second.log_prob(action[:, 1])
    )
    torch.testing.assert_close(head.entropy(dist), first.entropy() + second.entropy())
    assert torch.equal(head.mode(dist), torch.stack([first.logits.argmax(-1), second.logits.argmax(-1)], -1))
    assert all(space.contains(a) for a in action.numpy())


def test_bernoulli_head_of_multibinary_actions():
    logits = random_logits(64, 3).float()
    head = BernoulliHead(Fixed(logits))
    dist = head(torch.zeros(64, 1))
    reference = Bernoulli(logits=logits)
    action = head.sample(dist, torch.Generator().manual_seed(0))
    assert action.shape == (64, 3) and action.dtype == torch.int64 and set(action.unique().tolist()) <= {0, 1}
    torch.testing.assert_close(head.log_prob(dist, action), reference.log_prob(action.float()).sum(-1))
    torch.testing.assert_close(head.entropy(dist), reference.entropy().sum(-1))
    assert torch.equal(head.mode(dist), (logits > 0).long())
    # Samples follow the probabilities.
    wide = BernoulliHead(Fixed(logits[:1].expand(20000, 3)))
    many = wide.sample(wide(torch.zeros(20000, 1)), torch.Generator().manual_seed(1))
    torch.testing.assert_close(many.float().mean(0), torch.sigmoid(logits[0]), atol=0.02, rtol=0)


def _heads():
    torch.manual_seed(0)
    yield CategoricalHead(nn.Linear(4, 5)), None
    mask = torch.rand(64, 5) < 0.6
    mask[:, 2] = True
    yield CategoricalHead(nn.Linear(4, 5)), mask
    gaussian = GaussianHead(nn.Linear(4, 3), gym.spaces.Box(-1, 1, (3,)), log_std_init=-0.7)
    yield gaussian, None
    multi = MultiCategoricalHead(nn.Linear(4, 5), gym.spaces.MultiDiscrete([2, 3]))
    yield multi, torch.rand(64, 5) < 2
    yield BernoulliHead(nn.Linear(4, 3)), None


@pytest.mark.parametrize("index", range(5))
def test_draw_is_the_distributions_sample_and_log_prob_bit_for_bit(index):
    # The collection step draws without a distribution object: the same draws from the same generator and the
    # same numbers, or every run's data would change (benchmarks/identity.py compares whole runs).
    head, mask = list(_heads())[index]
    obs = torch.randn(64, 4, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        action, log_prob = head.draw(obs, mask, torch.Generator().manual_seed(7))
        dist = head(obs, mask)
        expected = head.sample(dist, torch.Generator().manual_seed(7))
        expected_log_prob = head.log_prob(dist, expected)
    assert torch.equal(action, expected) and torch.equal(log_prob, expected_log_prob)
    assert log_prob.shape == (64,)
