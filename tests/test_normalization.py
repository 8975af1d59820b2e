import numpy as np
import torch

from rlcli.normalization import ObservationNormalizer, RewardScaler, RunningMeanStd


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
    out = norm(data, update=True)
    assert out.dtype == torch.float32
    assert torch.allclose(out.mean(0), torch.zeros(2), atol=0.05)
    assert torch.allclose(out.std(0), torch.ones(2), atol=0.05)
    assert norm(torch.tensor([[1e6, 1e6]])).tolist() == [[3.0, 3.0]]
    state = norm.state_dict()
    assert {"stats.mean", "stats.var", "stats.count"} <= set(state)


def test_disabled_normalizer_is_identity():
    norm = ObservationNormalizer((2,), enabled=False, clip=3.0)
    data = torch.tensor([[100.0, -100.0]])
    assert norm(data, update=True) is data


def test_reward_scaler_divides_by_return_std_and_resets_on_done():
    scaler = RewardScaler(2, gamma=0.9, enabled=True)
    done = torch.tensor([False, True])
    for _ in range(50):
        scaled = scaler(torch.tensor([1.0, 1.0]), done)
    assert scaler.returns[1] == 0.0
    assert scaler.returns[0] > 5.0
    std = float(scaler.stats.var.sqrt())
    assert abs(float(scaled[0]) - 1.0 / std) < 1e-5
