import pytest
import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.advantages import add_gae, gae, n_step_returns


def reference_gae(reward, value, next_value, terminated, truncated, gamma, lam):
    """The textbook reversed loop over time, in float64."""
    steps, envs = reward.shape
    advantage = torch.zeros(steps, envs, dtype=torch.float64)
    running = torch.zeros(envs, dtype=torch.float64)
    for t in reversed(range(steps)):
        bootstrap = next_value[t].double() * (~terminated[t])
        delta = reward[t].double() + gamma * bootstrap - value[t].double()
        running = delta + gamma * lam * (~(terminated[t] | truncated[t])) * running
        advantage[t] = running
    return advantage


def random_rollout(steps, envs, seed, p_term=0.05, p_trunc=0.03):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(steps, envs, generator=g),
        torch.randn(steps, envs, generator=g),
        torch.randn(steps, envs, generator=g),
        torch.rand(steps, envs, generator=g) < p_term,
        torch.rand(steps, envs, generator=g) < p_trunc,
    )


@pytest.mark.parametrize("steps,envs", [(1, 1), (7, 3), (31, 2), (32, 4), (33, 5), (512, 8), (2048, 2)])
@pytest.mark.parametrize("gamma,lam", [(0.99, 0.95), (0.98, 0.8), (1.0, 1.0), (0.9, 0.0)])
def test_gae_matches_reference_loop(steps, envs, gamma, lam):
    rollout = random_rollout(steps, envs, seed=steps * 31 + envs)
    advantage, target = gae(*rollout, gamma=gamma, lam=lam)
    expected = reference_gae(*rollout, gamma, lam)
    assert advantage.shape == (steps, envs) and advantage.dtype == torch.float32
    torch.testing.assert_close(advantage.double(), expected, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(target, advantage + rollout[1])


def test_gae_with_dense_episode_ends_and_long_rollouts():
    rollout = random_rollout(4096, 3, seed=1, p_term=0.3, p_trunc=0.3)
    advantage, _ = gae(*rollout, gamma=0.999, lam=0.99)
    torch.testing.assert_close(advantage.double(), reference_gae(*rollout, 0.999, 0.99), rtol=1e-5, atol=1e-4)


def test_termination_drops_bootstrap_but_truncation_keeps_it():
    reward = torch.zeros(1, 2)
    value = torch.zeros(1, 2)
    next_value = torch.full((1, 2), 10.0)
    terminated = torch.tensor([[True, False]])
    truncated = torch.tensor([[False, True]])
    advantage, _ = gae(reward, value, next_value, terminated, truncated, gamma=0.5, lam=0.9)
    assert advantage.tolist() == [[0.0, 5.0]]


def test_episode_end_stops_the_trace():
    # A large reward after the episode end must not leak into the step before it.
    reward = torch.tensor([[0.0], [100.0]])
    zeros = torch.zeros(2, 1)
    done = torch.tensor([[True], [False]])
    advantage, _ = gae(reward, zeros, zeros, done, torch.zeros_like(done), gamma=0.99, lam=0.95)
    assert advantage[0, 0] == 0.0
    assert advantage[1, 0] == 100.0


def test_add_gae_writes_advantage_and_target_keys():
    reward, value, next_value, terminated, truncated = random_rollout(16, 4, seed=3)
    batch = TensorDict(
        {keys.REWARD: reward, keys.VALUE: value, keys.NEXT_VALUE: next_value,
         keys.TERMINATED: terminated, keys.TRUNCATED: truncated},
        batch_size=[16, 4],
    )
    add_gae(batch, gamma=0.9, lam=0.7)
    expected = reference_gae(reward, value, next_value, terminated, truncated, 0.9, 0.7)
    torch.testing.assert_close(batch[keys.ADVANTAGE].double(), expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(batch[keys.VALUE_TARGET], batch[keys.ADVANTAGE] + value)


def n_step_loop(reward, terminated, truncated, gamma, n, starts):
    """The n-step sums written as the definition reads, one window at a time."""
    steps, envs = reward.shape
    returns = torch.zeros(starts, envs)
    last = torch.zeros(starts, envs, dtype=torch.int64)
    for s in range(starts):
        for e in range(envs):
            total, k = 0.0, 0
            while True:
                total += gamma**k * float(reward[s + k, e])
                if terminated[s + k, e] or truncated[s + k, e] or k == n - 1:
                    break
                k += 1
            returns[s, e], last[s, e] = total, s + k
    return returns, last, gamma ** (last - torch.arange(starts)[:, None] + 1).float()


@pytest.mark.parametrize("n", [1, 3, 5])
def test_n_step_returns_match_a_plain_loop(n):
    g = torch.Generator().manual_seed(n)
    steps, envs = 24, 5
    reward = torch.randn(steps, envs, generator=g)
    terminated = torch.rand(steps, envs, generator=g) < 0.1
    truncated = torch.rand(steps, envs, generator=g) < 0.1
    starts = steps - (n - 1)
    fast = n_step_returns(reward, terminated, truncated, gamma=0.9, n=n, starts=starts)
    slow = n_step_loop(reward, terminated, truncated, 0.9, n, starts)
    torch.testing.assert_close(fast[0], slow[0])
    assert torch.equal(fast[1], slow[1])
    torch.testing.assert_close(fast[2], slow[2])
