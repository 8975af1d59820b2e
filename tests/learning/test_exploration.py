"""Exploration: epsilon-greedy acting, action bounds (uniform warm-up draws, clipping) and Gaussian and OU action noise."""

import numpy as np
import pytest
import torch
from gymnasium import spaces

from rlcli.learning.exploration import ActionBounds, ActionNoise, EpsilonGreedy, epsilon_greedy, uniform_actions

BOX = spaces.Box(low=np.array([-2.0, 0.0], dtype=np.float32), high=np.array([2.0, 1.0], dtype=np.float32))


def test_bounds_are_float32_tensors_on_the_device_and_clip_each_dimension():
    bounds = ActionBounds(BOX, torch.device("cpu"))
    assert bounds.low.dtype == torch.float32 and bounds.low.tolist() == [-2.0, 0.0]
    clipped = bounds.clip(torch.tensor([[-3.0, 0.5], [1.0, 7.0]]))
    assert clipped.tolist() == [[-2.0, 0.5], [1.0, 1.0]]


def test_uniform_draws_fill_the_box_and_repeat_from_the_same_seed():
    bounds = ActionBounds(BOX, torch.device("cpu"))
    draws = bounds.uniform(20_000, torch.Generator().manual_seed(0))
    again = uniform_actions(bounds.low, bounds.high, 20_000, torch.Generator().manual_seed(0))
    assert draws.shape == (20_000, 2) and torch.equal(draws, again)
    assert bool((draws >= bounds.low).all()) and bool((draws <= bounds.high).all())
    # Uniform on [low, high]: mean at the centre, variance (high - low)^2 / 12.
    torch.testing.assert_close(draws.mean(0), torch.tensor([0.0, 0.5]), atol=0.03, rtol=0)
    torch.testing.assert_close(draws.var(0), torch.tensor([16 / 12, 1 / 12]), atol=0.03, rtol=0)


def test_gaussian_noise_is_scaled_by_the_half_range():
    noise = ActionNoise("gaussian", scale=0.1, num_envs=4, half_range=torch.tensor([2.0, 0.5]))
    action = torch.zeros(4, 2)
    out = noise(action, torch.Generator().manual_seed(1))
    draw = torch.randn((4, 2), generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(out, 0.1 * draw * torch.tensor([2.0, 0.5]))
    # Gaussian noise keeps no state.
    assert not noise.state.any()


def test_ou_noise_follows_its_recursion_per_env_and_is_saved():
    noise = ActionNoise("ou", scale=0.3, num_envs=2, half_range=torch.tensor([1.0]), theta=0.15, dt=0.01)
    generator = torch.Generator().manual_seed(2)
    replay = torch.Generator().manual_seed(2)
    x = torch.zeros(2, 1)
    for _ in range(5):
        out = noise(torch.ones(2, 1), generator)
        draw = torch.randn((2, 1), generator=replay)
        x = x - 0.15 * x * 0.01 + 0.3 * 0.01**0.5 * draw
        torch.testing.assert_close(out, 1.0 + x)
    copy = ActionNoise("ou", scale=0.3, num_envs=2, half_range=torch.tensor([1.0]))
    copy.load_state_dict(noise.state_dict())
    assert torch.equal(copy.state, noise.state)


@pytest.mark.parametrize("kind", ["gaussian", "ou"])
def test_noise_draws_come_from_the_generator_given(kind):
    noise = ActionNoise(kind, scale=0.2, num_envs=3, half_range=torch.tensor([1.0]))
    global_state = torch.get_rng_state()
    noise(torch.zeros(3, 1), torch.Generator().manual_seed(0))
    assert torch.equal(torch.get_rng_state(), global_state)


def test_ornstein_uhlenbeck_noise_is_correlated_in_time_and_gaussian_is_not():
    half = torch.tensor([1.0])
    g = torch.Generator().manual_seed(0)
    ou = ActionNoise("ou", scale=0.3, num_envs=1, half_range=half, theta=0.15, dt=1e-2)
    gauss = ActionNoise("gaussian", scale=0.3, num_envs=1, half_range=half)
    zero = torch.zeros(1, 1)
    ou_path = torch.cat([ou(zero, g) for _ in range(2000)]).squeeze(1)
    gauss_path = torch.cat([gauss(zero, g) for _ in range(2000)]).squeeze(1)

    def lag_one(x):
        x = x - x.mean()
        return float((x[1:] * x[:-1]).mean() / x.var())

    assert lag_one(ou_path) > 0.9 and abs(lag_one(gauss_path)) < 0.1
    assert torch.equal(ou.state_dict()["state"], ou.state)


def test_epsilon_greedy_is_uniform_in_warm_up_then_decays_linearly_and_holds_at_its_end():
    exploration = EpsilonGreedy(3, start=1.0, end=0.1, decay_frames=100)
    rates = []
    for frames, learning in ((50, False), (0, True), (50, True), (100, True), (400, True)):
        exploration.advance(frames, learning=learning)
        rates.append(exploration.epsilon)
    assert rates == pytest.approx([1.0, 1.0, 0.55, 0.1, 0.1])


def test_epsilon_greedy_asks_for_no_greedy_action_at_a_rate_of_one_and_keeps_it_at_zero():
    exploration = EpsilonGreedy(4, start=1.0, end=0.0, decay_frames=0)
    observation = torch.zeros(500, 2)

    def refuse(observation):
        raise AssertionError("no greedy action at epsilon 1")

    uniform = exploration(observation, refuse, torch.Generator().manual_seed(0))
    assert set(uniform.tolist()) == {0, 1, 2, 3}
    exploration.advance(10, learning=True)
    greedy = exploration(observation, lambda obs: torch.full((obs.shape[0],), 2), torch.Generator().manual_seed(0))
    assert exploration.epsilon == 0.0 and bool((greedy == 2).all())


def test_masked_argmax_max_and_uniform_actions_keep_to_the_allowed_actions():
    from rlcli.learning.exploration import epsilon_greedy, masked_argmax, masked_max, uniform_discrete

    g = torch.Generator().manual_seed(0)
    values = torch.randn(200, 4, generator=g)
    mask = torch.rand(200, 4, generator=g) < 0.5
    mask[:, 2] |= ~mask.any(1)
    best = masked_argmax(values, mask)
    assert mask[torch.arange(200), best].all()
    for row in range(200):
        allowed = mask[row].nonzero().squeeze(1)
        assert best[row] == allowed[values[row, allowed].argmax()]
        assert masked_max(values, mask)[row] == values[row, allowed].max()
    # Unmasked: exactly what argmax and max give.
    assert torch.equal(masked_argmax(values, None), values.argmax(1))
    assert torch.equal(masked_max(values, None), values.max(1).values)
    # A row that allows nothing has a max of 0, never -inf (a terminal bootstrap would turn it into NaN).
    assert masked_max(values[:1], torch.zeros(1, 4, dtype=torch.bool)).item() == 0.0
    uniform = uniform_discrete(torch.empty(200), 4, torch.Generator().manual_seed(1), mask)
    assert mask[torch.arange(200), uniform].all()
    explored = epsilon_greedy(best, 1.0, 4, torch.Generator().manual_seed(2), mask)
    assert mask[torch.arange(200), explored].all() and not torch.equal(explored, best)
    # Every allowed action is drawn: uniform among them.
    one = torch.tensor([[True, False, True, True]]).expand(3000, 4)
    drawn = uniform_discrete(torch.empty(3000), 4, torch.Generator().manual_seed(3), one)
    counts = torch.bincount(drawn, minlength=4).float() / 3000
    torch.testing.assert_close(counts, torch.tensor([1 / 3, 0.0, 1 / 3, 1 / 3]), atol=0.04, rtol=0)


def test_epsilon_greedy_draws_as_before_without_a_mask():
    greedy = torch.tensor([1, 2, 3, 0] * 25)
    before_uniform = torch.randint(4, (100,), generator=torch.Generator().manual_seed(5))
    g = torch.Generator().manual_seed(5)
    torch.randint(4, (100,), generator=g)
    coins = torch.rand(100, generator=g) < 0.3
    expected = torch.where(coins, before_uniform, greedy)
    assert torch.equal(epsilon_greedy(greedy, 0.3, 4, torch.Generator().manual_seed(5)), expected)
