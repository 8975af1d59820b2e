"""gSDE's maths against plain formulas written here, on random weights, features and noise: the std, the
log-probability and entropy of the state-dependent Gaussian (plain and tanh-squashed), the action
``mean + z @ E``, and when the held noise matrices are drawn again."""

import math

import pytest
import torch

from rlcli.models.gsde import (
    EPSILON,
    NoiseSchedule,
    SquashedStateDependentActor,
    StateDependentHead,
    StateDependentNoise,
    squashed_log_prob,
)
from rlcli.models.mlp import mlp

LATENT, ACTIONS, BATCH = 5, 3, 7


def plain_std(log_std: torch.Tensor, use_expln: bool) -> torch.Tensor:
    """The std of each weight, one element at a time: exp, or expln (exp below 0, log1p(x + eps) + 1 above)."""
    out = torch.empty_like(log_std)
    for index, x in enumerate(log_std.flatten().tolist()):
        if not use_expln or x <= 0:
            value = math.exp(x)
        else:
            value = math.log1p(x + EPSILON) + 1.0
        out.view(-1)[index] = value
    return out


def plain_gaussian(latent: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, action: torch.Tensor):
    """(log-probability [B], entropy [B]) of ``action`` under independent Gaussians of variance
    sum_l z_l^2 std_la^2 + eps, with loops over rows and action dimensions."""
    log_probs, entropies = [], []
    for b in range(latent.shape[0]):
        log_prob = entropy = 0.0
        for a in range(mean.shape[1]):
            variance = sum(float(latent[b, i]) ** 2 * float(std[i, a]) ** 2 for i in range(latent.shape[1])) + EPSILON
            diff = float(action[b, a]) - float(mean[b, a])
            log_prob += -diff * diff / (2 * variance) - 0.5 * math.log(2 * math.pi * variance)
            entropy += 0.5 * math.log(2 * math.pi * math.e * variance)
        log_probs.append(log_prob)
        entropies.append(entropy)
    return torch.tensor(log_probs), torch.tensor(entropies)


def random_noise(full_std: bool, use_expln: bool, seed: int = 0) -> StateDependentNoise:
    noise = StateDependentNoise(LATENT, ACTIONS, log_std_init=0.0, full_std=full_std, use_expln=use_expln)
    with torch.no_grad():
        # Both signs: expln takes both of its branches.
        noise.log_std.copy_(torch.randn(noise.log_std.shape, generator=torch.Generator().manual_seed(seed)))
    return noise


def head(full_std: bool, use_expln: bool) -> StateDependentHead:
    torch.manual_seed(3)
    return StateDependentHead(
        mlp(4, [LATENT], ACTIONS, activation="tanh", orthogonal=False, out_gain=1.0),
        random_noise(full_std, use_expln),
    )


@pytest.mark.parametrize("full_std", [True, False])
@pytest.mark.parametrize("use_expln", [False, True])
def test_the_std_is_exp_or_expln_of_log_std_one_per_pair_or_per_feature(full_std, use_expln):
    noise = random_noise(full_std, use_expln)
    assert noise.log_std.shape == ((LATENT, ACTIONS) if full_std else (LATENT, 1))
    expected = plain_std(noise.log_std.detach(), use_expln).expand(LATENT, ACTIONS)
    torch.testing.assert_close(noise.std().detach(), expected, rtol=1e-6, atol=0)
    if not full_std:
        assert (noise.std()[:, :1] == noise.std()).all()


@pytest.mark.parametrize("full_std", [True, False])
@pytest.mark.parametrize("use_expln", [False, True])
def test_log_prob_and_entropy_are_those_of_the_state_dependent_gaussian(full_std, use_expln):
    policy = head(full_std, use_expln)
    obs = torch.randn(BATCH, 4, generator=torch.Generator().manual_seed(1))
    dist = policy(obs)
    latent = torch.tanh(policy.net[0](obs)).detach()
    mean = policy.net[2](latent).detach()
    torch.testing.assert_close(dist.latent, latent)
    action = mean + torch.randn(BATCH, ACTIONS, generator=torch.Generator().manual_seed(2))
    std = plain_std(policy.noise.log_std.detach(), use_expln).expand(LATENT, ACTIONS)
    log_prob, entropy = plain_gaussian(latent, mean, std, action)
    torch.testing.assert_close(policy.log_prob(dist, action).detach(), log_prob, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(policy.entropy(dist).detach(), entropy, rtol=1e-5, atol=1e-5)


def test_the_variance_takes_the_features_detached_and_log_std_gets_the_gradient():
    policy = head(True, False)
    obs = torch.randn(BATCH, 4)
    dist = policy(obs)
    policy.entropy(dist).sum().backward()
    # The entropy depends on the std alone: the features it reads are detached (SB3's learn_features=False).
    assert policy.noise.log_std.grad is not None and policy.noise.log_std.grad.abs().sum() > 0
    assert policy.net[0].weight.grad is None


def test_an_action_is_the_mean_plus_the_features_times_the_held_matrix_of_its_row():
    policy = head(True, False)
    obs = torch.randn(BATCH, 4)
    dist = policy(obs)
    matrices = policy.noise.draw(torch.Generator().manual_seed(5), BATCH).detach()
    action = policy.perturb(dist, matrices)
    for b in range(BATCH):
        expected = dist.normal.loc[b] + dist.latent[b] @ matrices[b]
        torch.testing.assert_close(action[b], expected)
    # One matrix for every row (evaluation's draws): the same sum with that matrix.
    one = matrices[0]
    torch.testing.assert_close(policy.perturb(dist, one), dist.normal.loc + dist.latent @ one)
    assert torch.equal(policy.mode(dist), dist.normal.loc)


def test_the_noise_weights_are_drawn_with_the_std_and_the_generator():
    noise = random_noise(True, False)
    first = noise.draw(torch.Generator().manual_seed(9), 4000)
    again = noise.draw(torch.Generator().manual_seed(9), 4000)
    assert torch.equal(first, again) and first.shape == (4000, LATENT, ACTIONS)
    torch.testing.assert_close(first.detach().std(0), noise.std().detach(), rtol=0.08, atol=0)


def squashed_actor() -> SquashedStateDependentActor:
    import gymnasium as gym

    torch.manual_seed(4)
    space = gym.spaces.Box(-2.0, 2.0, (ACTIONS,))
    net = mlp(4, [LATENT], ACTIONS, activation="tanh", orthogonal=False, out_gain=1.0)
    noise = StateDependentNoise(LATENT, ACTIONS, log_std_init=-1.0, full_std=True, use_expln=False)
    return SquashedStateDependentActor(torch.nn.Identity(), net, space, noise)


def test_the_squashed_log_prob_is_the_gaussians_less_the_tanh_correction():
    actor = squashed_actor()
    obs = torch.randn(BATCH, 4, generator=torch.Generator().manual_seed(6))
    matrices = actor.noise.draw(torch.Generator().manual_seed(7), BATCH).detach()
    action, log_prob = actor(obs, noise=matrices)
    latent = torch.tanh(actor.net[0](obs)).detach()
    mean = actor.net[2](latent).detach().clamp(-2.0, 2.0)
    pre_tanh = mean + torch.bmm(latent[:, None], matrices)[:, 0]
    torch.testing.assert_close(action.detach(), 2.0 * torch.tanh(pre_tanh))
    std = actor.noise.std().detach()
    gaussian, _ = plain_gaussian(latent, mean, std, pre_tanh)
    correction = torch.log(1 - torch.tanh(pre_tanh) ** 2 + EPSILON).sum(-1)
    torch.testing.assert_close(log_prob.detach(), gaussian - correction, rtol=1e-4, atol=1e-4)
    deterministic, _ = actor(obs, deterministic=True)
    torch.testing.assert_close(deterministic.detach(), 2.0 * torch.tanh(mean))


def test_the_squashed_log_prob_stays_finite_where_tanh_rounds_to_one():
    normal = torch.distributions.Normal(torch.zeros(2, 1), torch.ones(2, 1))
    assert torch.isfinite(squashed_log_prob(normal, torch.tensor([[1.0], [-1.0]]))).all()


def draws_of(schedule: NoiseSchedule, steps: int, envs: int = 2) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return [schedule(envs, generator).clone() for _ in range(steps)]


@pytest.mark.parametrize(
    ("sample_freq", "new_at"),
    [(-1, {0, 8, 16}), (3, {0, 3, 6, 8, 11, 14, 16, 19}), (1, set(range(20))), (8, {0, 8, 16})],
)
def test_the_noise_is_held_between_draws_at_each_rollouts_start_and_every_sample_freq_steps(sample_freq, new_at):
    schedule = NoiseSchedule(random_noise(True, False), rollout_steps=8, sample_freq=sample_freq)
    matrices = draws_of(schedule, 20)
    for step in range(1, 20):
        changed = not torch.equal(matrices[step], matrices[step - 1])
        assert changed == (step in new_at), step
    # One matrix per env, each its own draw.
    assert matrices[0].shape == (2, LATENT, ACTIONS) and not torch.equal(matrices[0][0], matrices[0][1])


def test_a_schedule_restored_from_its_state_draws_what_it_would_have():
    noise = random_noise(True, False)
    schedule = NoiseSchedule(noise, rollout_steps=8, sample_freq=3)
    generator = torch.Generator().manual_seed(0)
    for _ in range(5):
        schedule(2, generator)
    state, generator_state = schedule.state_dict(), generator.get_state()
    after = [schedule(2, generator).clone() for _ in range(6)]
    restored = NoiseSchedule(noise, rollout_steps=8, sample_freq=3)
    restored.load_state_dict(state)
    generator.set_state(generator_state)
    assert all(torch.equal(a, restored(2, generator)) for a in after)


def test_another_number_of_envs_draws_afresh():
    schedule = NoiseSchedule(random_noise(True, False), rollout_steps=8, sample_freq=-1)
    generator = torch.Generator().manual_seed(0)
    assert schedule(2, generator).shape[0] == 2
    assert schedule(3, generator).shape[0] == 3
