import typing

import pytest
import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.config.algos import ALGO_CONFIGS
from rlcli.learning.advantages import (
    ESTIMATORS,
    add_advantages,
    episode_ended,
    gae,
    n_step_returns,
    td0,
    td1,
    td_lambda,
)


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


def test_add_advantages_writes_advantage_and_target_keys_by_the_named_estimator():
    reward, value, next_value, terminated, truncated = random_rollout(16, 4, seed=3)
    batch = TensorDict(
        {
            keys.REWARD: reward,
            keys.VALUE: value,
            keys.NEXT_VALUE: next_value,
            keys.TERMINATED: terminated,
            keys.TRUNCATED: truncated,
        },
        batch_size=[16, 4],
    )
    add_advantages(batch, gamma=0.9, lam=0.7)
    expected = reference_gae(reward, value, next_value, terminated, truncated, 0.9, 0.7)
    torch.testing.assert_close(batch[keys.ADVANTAGE].double(), expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(batch[keys.VALUE_TARGET], batch[keys.ADVANTAGE] + value)
    add_advantages(batch, estimator="td1", gamma=0.9, lam=0.7)
    expected = reference_lambda_return(reward, next_value, terminated, truncated, 0.9, 1.0)
    torch.testing.assert_close(batch[keys.VALUE_TARGET].double(), expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(batch[keys.ADVANTAGE], batch[keys.VALUE_TARGET] - value)


def test_add_advantages_reads_given_values_instead_of_the_batchs():
    reward, value, next_value, terminated, truncated = random_rollout(16, 4, seed=4)
    batch = TensorDict(
        {
            keys.REWARD: reward,
            keys.VALUE: value,
            keys.NEXT_VALUE: next_value,
            keys.TERMINATED: terminated,
            keys.TRUNCATED: truncated,
        },
        batch_size=[16, 4],
    )
    zeros = torch.zeros_like(reward)
    add_advantages(batch, estimator="td1", gamma=0.9, lam=1.0, value=zeros, next_value=zeros)
    expected = reference_lambda_return(reward, zeros, terminated, truncated, 0.9, 1.0)
    torch.testing.assert_close(batch[keys.VALUE_TARGET].double(), expected, rtol=1e-5, atol=1e-5)
    assert torch.equal(batch[keys.ADVANTAGE], batch[keys.VALUE_TARGET])


def reference_td0(reward, next_value, terminated, gamma):
    """One bootstrapped step, element by element."""
    steps, envs = reward.shape
    target = torch.zeros(steps, envs, dtype=torch.float64)
    for t in range(steps):
        for e in range(envs):
            bootstrap = 0.0 if terminated[t, e] else float(next_value[t, e])
            target[t, e] = float(reward[t, e]) + gamma * bootstrap
    return target


def reference_lambda_return(reward, next_value, terminated, truncated, gamma, lam):
    """The lambda-return as Sutton and Barto write it, one env at a time from the back: the return
    stops at a termination (no bootstrap), at a truncation and at the rollout's end (bootstrap)."""
    steps, envs = reward.shape
    target = torch.zeros(steps, envs, dtype=torch.float64)
    for e in range(envs):
        later = 0.0
        for t in reversed(range(steps)):
            r, v = float(reward[t, e]), float(next_value[t, e])
            if terminated[t, e]:
                later = r
            elif truncated[t, e] or t == steps - 1:
                later = r + gamma * v
            else:
                later = r + gamma * ((1 - lam) * v + lam * later)
            target[t, e] = later
    return target


def reference_monte_carlo(reward, next_value, terminated, truncated, gamma):
    """Discounted sums of rewards to each episode's end, written forwards: sum_k gamma^k r_{t+k}
    up to the step that ends the episode (or the rollout), plus gamma^(k+1) V there unless it
    terminated."""
    steps, envs = reward.shape
    target = torch.zeros(steps, envs, dtype=torch.float64)
    for e in range(envs):
        for t in range(steps):
            total, k = 0.0, 0
            while True:
                total += gamma**k * float(reward[t + k, e])
                if terminated[t + k, e]:
                    break
                if truncated[t + k, e] or t + k == steps - 1:
                    total += gamma ** (k + 1) * float(next_value[t + k, e])
                    break
                k += 1
            target[t, e] = total
    return target


SHAPES = [(1, 1), (7, 3), (32, 4), (33, 5), (257, 3)]


@pytest.mark.parametrize("steps,envs", SHAPES)
@pytest.mark.parametrize("gamma", [0.99, 0.9, 1.0])
def test_td0_matches_a_plain_loop(steps, envs, gamma):
    reward, value, next_value, terminated, truncated = random_rollout(
        steps, envs, seed=steps + envs, p_term=0.1, p_trunc=0.1
    )
    advantage, target = td0(reward, value, next_value, terminated, truncated, gamma=gamma)
    assert target.shape == (steps, envs) and target.dtype == torch.float32
    torch.testing.assert_close(target.double(), reference_td0(reward, next_value, terminated, gamma))
    torch.testing.assert_close(advantage, target - value)


@pytest.mark.parametrize("steps,envs", SHAPES)
@pytest.mark.parametrize("gamma", [0.99, 0.9, 1.0])
def test_td1_matches_a_plain_loop_of_monte_carlo_returns(steps, envs, gamma):
    reward, value, next_value, terminated, truncated = random_rollout(steps, envs, seed=steps * 7 + envs)
    advantage, target = td1(reward, value, next_value, terminated, truncated, gamma=gamma)
    assert target.shape == (steps, envs) and target.dtype == torch.float32
    expected = reference_monte_carlo(reward, next_value, terminated, truncated, gamma)
    torch.testing.assert_close(target.double(), expected, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(advantage, target - value)


@pytest.mark.parametrize("steps,envs", SHAPES + [(2048, 2)])
@pytest.mark.parametrize("gamma,lam", [(0.99, 0.95), (0.98, 0.8), (1.0, 1.0), (0.9, 0.0), (0.99, 0.5)])
def test_td_lambda_matches_a_plain_loop(steps, envs, gamma, lam):
    reward, value, next_value, terminated, truncated = random_rollout(steps, envs, seed=steps * 13 + envs)
    advantage, target = td_lambda(reward, value, next_value, terminated, truncated, gamma=gamma, lam=lam)
    assert target.shape == (steps, envs) and target.dtype == torch.float32
    expected = reference_lambda_return(reward, next_value, terminated, truncated, gamma, lam)
    torch.testing.assert_close(target.double(), expected, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(advantage, target - value)


@pytest.mark.parametrize("steps,envs", [(7, 3), (33, 5), (512, 4)])
def test_td_lambda_at_0_is_td0_and_at_1_is_td1(steps, envs):
    rollout = random_rollout(steps, envs, seed=steps + 100 * envs, p_term=0.1, p_trunc=0.1)
    for lam, other in ((0.0, td0(*rollout, gamma=0.97)), (1.0, td1(*rollout, gamma=0.97))):
        ours = td_lambda(*rollout, gamma=0.97, lam=lam)
        torch.testing.assert_close(ours[0], other[0], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(ours[1], other[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("steps,envs", [(7, 3), (33, 5), (512, 4)])
@pytest.mark.parametrize("gamma,lam", [(0.99, 0.95), (0.9, 0.0), (1.0, 1.0), (0.98, 0.7)])
def test_td_lambda_targets_are_gae_targets_when_next_value_is_the_next_steps_value(steps, envs, gamma, lam):
    reward, value, next_value, terminated, truncated = random_rollout(steps, envs, seed=steps * 3 + envs)
    # Inside an episode V(s_{t+1}) is the next step's value; at episode ends and the rollout's
    # end, next_value is the final observation's (its own draw).
    done = terminated | truncated
    next_value[:-1] = torch.where(done[:-1], next_value[:-1], value[1:])
    gae_advantage, gae_target = gae(reward, value, next_value, terminated, truncated, gamma=gamma, lam=lam)
    advantage, target = td_lambda(reward, value, next_value, terminated, truncated, gamma=gamma, lam=lam)
    torch.testing.assert_close(target, gae_target, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(advantage, gae_advantage, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_termination_drops_the_bootstrap_and_truncation_keeps_it_in_every_estimator(name):
    # Env 0 terminates at step 0, env 1 is truncated there; a large reward after the end must not leak back.
    reward = torch.tensor([[1.0, 1.0], [100.0, 100.0]])
    value = torch.zeros(2, 2)
    next_value = torch.tensor([[10.0, 10.0], [0.0, 0.0]])
    terminated = torch.tensor([[True, False], [False, False]])
    truncated = torch.tensor([[False, True], [False, False]])
    advantage, target = ESTIMATORS[name](reward, value, next_value, terminated, truncated, gamma=0.5, lam=0.9)
    assert target[0].tolist() == [1.0, 6.0]
    assert target[1].tolist() == [100.0, 100.0]
    assert torch.equal(advantage, target - value)


def test_every_config_names_exactly_the_estimators_of_the_table():
    names = set(ESTIMATORS)
    assert names == {"gae", "td0", "td1", "td_lambda"}
    users = [model for model in ALGO_CONFIGS.values() if "value_target" in model.model_fields]
    assert {model.model_fields["name"].annotation.__args__[0] for model in users} >= {"ppo", "a2c", "reinforce"}
    for model in users:
        assert set(typing.get_args(model.model_fields["value_target"].annotation)) == names


def test_gae_is_the_default_estimator_of_ppo_and_a2c_and_td1_of_reinforce():
    assert ALGO_CONFIGS["ppo"].model_fields["value_target"].default == "gae"
    assert ALGO_CONFIGS["a2c"].model_fields["value_target"].default == "gae"
    assert ALGO_CONFIGS["reinforce"].model_fields["value_target"].default == "td1"


def test_episode_ended_is_false_only_at_the_steps_of_episodes_the_rollout_cut():
    _, _, _, terminated, truncated = random_rollout(64, 6, seed=5, p_term=0.05, p_trunc=0.05)
    ended = episode_ended(terminated, truncated)
    done = terminated | truncated
    expected = torch.zeros_like(done)
    for e in range(done.shape[1]):
        for t in range(done.shape[0]):
            expected[t, e] = bool(done[t:, e].any())
    assert torch.equal(ended, expected)
    assert not bool(ended[-1][~done[-1]].any())


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
