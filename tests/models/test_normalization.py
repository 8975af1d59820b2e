import numpy as np
import pytest
import torch

from rlcli.models.normalization import ObservationNormalizer, RewardScaler, RunningMeanStd


def test_running_mean_std_matches_numpy_over_batches():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, size=(n, 3)) for n in (5, 17, 1, 40)]
    stats = RunningMeanStd((3,))
    for batch in batches:
        stats.update(torch.as_tensor(batch))
    everything = np.concatenate(batches)
    np.testing.assert_allclose(stats.mean.numpy(), everything.mean(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(stats.var.numpy(), everything.var(0), rtol=1e-3, atol=1e-3)


def test_observation_normalizer_standardizes_and_clips():
    norm = ObservationNormalizer((2,), enabled=True, clip=3.0)
    data = torch.randn(1000, 2) * torch.tensor([10.0, 0.1]) + torch.tensor([5.0, -1.0])
    assert norm(data) is not data and torch.equal(norm(data), data.clamp(-3, 3))
    norm.observe(data)
    out = norm(data)
    assert out.dtype == torch.float32
    assert torch.allclose(out.mean(0), torch.zeros(2), atol=0.05)
    assert torch.allclose(out.std(0), torch.ones(2), atol=0.05)
    assert norm(torch.tensor([[1e6, 1e6]])).tolist() == [[3.0, 3.0]]
    state = norm.state_dict()
    assert {"stats.mean", "stats.var", "stats.count"} <= set(state)


def test_disabled_normalizer_is_identity():
    norm = ObservationNormalizer((2,), enabled=False, clip=3.0)
    data = torch.tensor([[100.0, -100.0]])
    norm.observe(data)
    assert norm(data) is data
    assert float(norm.stats.count) < 1


def test_observe_skips_invalid_rows():
    norm = ObservationNormalizer((1,), enabled=True, clip=10.0)
    obs = torch.tensor([[[1.0], [100.0]], [[3.0], [100.0]]])
    valid = torch.tensor([[True, False], [True, False]])
    norm.observe(obs, valid)
    assert float(norm.stats.count) == pytest.approx(2.0, abs=1e-3)
    assert float(norm.stats.mean[0]) == pytest.approx(2.0, abs=1e-3)


def test_reward_scaler_divides_by_return_std_and_resets_on_done():
    scaler = RewardScaler(2, gamma=0.9, enabled=True)
    steps = 50
    reward = torch.ones(steps, 2)
    done = torch.zeros(steps, 2, dtype=torch.bool)
    done[:, 1] = True
    scaler.observe(reward, done, torch.ones(steps, 2, dtype=torch.bool))
    assert scaler.returns[1] == 0.0
    # The return of env 0 runs on across the whole rollout: sum of 0.9^k.
    assert float(scaler.returns[0]) == pytest.approx((1 - 0.9**steps) / (1 - 0.9), rel=1e-6)
    # The statistics hold every step's running return: env 0's grow, env 1's stay 1.
    expected = np.concatenate([[(1 - 0.9 ** (t + 1)) / (1 - 0.9) for t in range(steps)], np.ones(steps)])
    assert float(scaler.stats.var) == pytest.approx(expected.var(), rel=1e-3)
    scaled = scaler(torch.tensor([1.0, 1.0]))
    assert float(scaled[0]) == pytest.approx(1.0 / float(scaler.stats.var.sqrt()), rel=1e-5)


def test_reward_scaler_ignores_invalid_steps_and_is_identity_when_disabled():
    scaler = RewardScaler(1, gamma=0.5, enabled=True)
    reward = torch.tensor([[1.0], [50.0], [1.0]])
    valid = torch.tensor([[True], [False], [True]])
    scaler.observe(reward, torch.zeros(3, 1, dtype=torch.bool), valid)
    # The invalid 50 neither adds to the return nor to the statistics.
    assert float(scaler.returns[0]) == pytest.approx(1.5)
    assert float(scaler.stats.count) == pytest.approx(2.0, abs=1e-3)
    off = RewardScaler(1, gamma=0.5, enabled=False)
    off.observe(reward, torch.zeros(3, 1, dtype=torch.bool), valid)
    assert off(reward) is reward


class _Ranks:
    """Rank 0 of a two-rank group whose other rank folds in ``other`` (a [B, *shape] batch)."""

    world_size = 2

    def __init__(self, other: torch.Tensor):
        self.other = other

    def gather_rows(self, values: torch.Tensor) -> torch.Tensor:
        n = self.other.shape[0]
        flat = self.other.to(torch.float64).reshape(n, -1)
        row = torch.cat([flat.new_tensor([float(n)]), flat.mean(0), flat.var(0, unbiased=False)])
        return torch.stack([values, row])


def test_statistics_merged_across_ranks_are_those_of_the_pooled_data_without_cancellation():
    # A large offset and a tiny spread: sums of squares would cancel to a variance of 0.
    generator = torch.Generator().manual_seed(0)
    mine = 1e5 + 1e-3 * torch.randn(64, 3, generator=generator, dtype=torch.float64)
    theirs = 1e5 + 1e-3 * torch.randn(32, 3, generator=generator, dtype=torch.float64)
    merged = RunningMeanStd((3,), group=_Ranks(theirs))
    pooled = RunningMeanStd((3,))
    for stats in (merged, pooled):
        # Statistics that have already seen the offset, with no spread of their own.
        stats.mean.fill_(1e5)
        stats.var.zero_()
    merged.update(mine)
    pooled.update(torch.cat([mine, theirs]))
    assert merged.count.item() == pytest.approx(pooled.count.item())
    torch.testing.assert_close(merged.mean, pooled.mean, rtol=1e-12, atol=0)
    torch.testing.assert_close(merged.var, pooled.var, rtol=1e-6, atol=0)
    assert 0.5e-6 < merged.var.min().item() < 2e-6
