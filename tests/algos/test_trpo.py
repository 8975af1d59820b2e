"""TRPO: conjugate gradients, the natural gradient against an explicit Fisher matrix, the trust region
and line search, which weights each step moves, and the configs it refuses."""

import pytest
import torch
from torch import nn

from rlcli import keys
from rlcli.algos.trpo import Surrogate, conjugate_gradient, natural_gradient, policy_weights, value_weights
from rlcli.config.errors import ConfigError
from rlcli.config.load import validate_data
from rlcli.timing import Timer


def test_conjugate_gradient_solves_a_positive_definite_system():
    g = torch.Generator().manual_seed(0)
    m = torch.randn(6, 6, generator=g, dtype=torch.float64)
    a = m @ m.T + 0.5 * torch.eye(6, dtype=torch.float64)
    b = torch.randn(6, generator=g, dtype=torch.float64)
    x = conjugate_gradient(lambda v: a @ v, b, iterations=6)
    torch.testing.assert_close(x, torch.linalg.solve(a, b))
    # Fewer iterations than dimensions: not the solution yet, but already a descent direction.
    assert float(conjugate_gradient(lambda v: a @ v, b, iterations=2).dot(b)) > 0


@pytest.mark.parametrize("discrete", [True, False])
def test_natural_gradient_is_the_damped_fisher_solve_of_the_surrogates_gradient(discrete):
    """Against the explicit Hessian of the mean KL of a tiny linear policy (categorical, or Gaussian with a
    learned log-std), solved exactly; CG with as many iterations as weights finds the same."""
    torch.manual_seed(0)
    linear = nn.Linear(3, 2)
    log_std = nn.Parameter(torch.tensor([-0.3, 0.2]))
    params = [linear.weight, linear.bias] + ([] if discrete else [log_std])
    obs = torch.randn(40, 3)
    with torch.no_grad():
        old = linear(obs)
        action = torch.distributions.Categorical(logits=old).sample() if discrete else old + torch.randn(40, 2)
    advantage = torch.randn(40)

    def dist(weight, bias, *rest):
        out = obs @ weight.T + bias
        if discrete:
            return torch.distributions.Categorical(logits=out)
        return torch.distributions.Normal(out, rest[0].exp())

    old_dist = dist(*[p.detach() for p in params])

    def kl_of(flat):
        pieces = [chunk.view_as(p) for p, chunk in zip(params, flat.split([p.numel() for p in params]))]
        kl = torch.distributions.kl_divergence(old_dist, dist(*pieces))
        return (kl if discrete else kl.sum(-1)).mean()

    new = dist(*params)
    log_prob = new.log_prob(action) if discrete else new.log_prob(action).sum(-1)
    old_log_prob = old_dist.log_prob(action) if discrete else old_dist.log_prob(action).sum(-1)
    surrogate = ((log_prob - old_log_prob).exp() * advantage).mean()
    kl = torch.distributions.kl_divergence(old_dist, new)
    kl = (kl if discrete else kl.sum(-1)).mean()
    size = sum(p.numel() for p in params)
    direction, curvature = natural_gradient(surrogate, kl, params, iterations=size, damping=0.1)
    flat = torch.cat([p.detach().reshape(-1) for p in params])
    fisher = torch.autograd.functional.hessian(kl_of, flat) + 0.1 * torch.eye(size)
    gradient = torch.cat([g.reshape(-1) for g in torch.autograd.grad(surrogate, params)])
    expected = torch.linalg.solve(fisher.double(), gradient.double()).float()
    torch.testing.assert_close(direction, expected, rtol=1e-3, atol=1e-4)
    torch.testing.assert_close(curvature, expected @ fisher @ expected, rtol=1e-3, atol=1e-5)


def test_the_policy_step_stays_in_the_trust_region_and_improves_the_surrogate(cartpole_run):
    run = cartpole_run("trpo", seed=2, frames_per_batch=256, total_frames=2048, max_kl=0.02)
    try:
        algo, timer = run.algo, Timer(run.device)
        rows = algo.rollout.rows(run.source.next_batch(timer), timer)
        policy = [p.detach().clone() for p in policy_weights(algo.agent)]
        value = [p.detach().clone() for p in value_weights(algo.agent)]
        before = Surrogate(algo.agent, rows, normalize_advantage=True)
        stats = algo.policy_step(rows)
        assert stats["stats/line_search"] == 1.0 and 0 < stats["stats/step_fraction"] <= 1.0
        with torch.no_grad():
            surrogate, kl, _ = before()
        # The accepted step: inside the bound, better than the rollout's policy (its surrogate: 0 after normalizing).
        assert 0 < float(kl) < 0.02 and float(surrogate) > 0
        assert stats["stats/kl"] == pytest.approx(float(kl), rel=1e-4)
        assert any(not torch.equal(a, b) for a, b in zip(policy, policy_weights(algo.agent)))
        assert all(torch.equal(a, b) for a, b in zip(value, value_weights(algo.agent)))
        # The value steps move the value's weights only.
        policy = [p.detach().clone() for p in policy_weights(algo.agent)]
        algo.value_steps(rows, timer)
        assert all(torch.equal(a, b) for a, b in zip(policy, policy_weights(algo.agent)))
        assert all(not torch.equal(a, b) for a, b in zip(value, value_weights(algo.agent)))
    finally:
        run.close()


def test_no_improving_step_leaves_the_policy_as_it_was(cartpole_run):
    run = cartpole_run("trpo", seed=2, frames_per_batch=256, total_frames=2048, normalize_advantage=False)
    try:
        algo, timer = run.algo, Timer(run.device)
        rows = algo.rollout.rows(run.source.next_batch(timer), timer)
        # Zero advantages: no step can raise the surrogate, so every try fails and the weights return.
        rows[keys.ADVANTAGE] = torch.zeros_like(rows[keys.ADVANTAGE])
        policy = [p.detach().clone() for p in policy_weights(algo.agent)]
        stats = algo.policy_step(rows)
        assert stats["stats/line_search"] == 0.0 and stats["stats/step_fraction"] == 0.0
        assert all(torch.equal(a, b) for a, b in zip(policy, policy_weights(algo.agent)))
    finally:
        run.close()


def trpo_config(**algo):
    return validate_data(
        {
            "env": {"id": "CartPole-v1"},
            "algo": {"name": "trpo", **algo},
            "collector": {"frames_per_batch": 256, "total_frames": 1024},
        }
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_kl", 0.0), ("max_kl", -0.1), ("cg_iterations", 0), ("backtracks", 0), ("backtrack_ratio", 1.0)],
)
def test_trust_region_settings_out_of_range_are_refused(field, value):
    with pytest.raises(ConfigError) as info:
        trpo_config(**{field: value})
    assert f"algo.{field}" in info.value.render()


def test_a_value_minibatch_larger_than_the_rollout_takes_it_whole(cartpole_run):
    run = cartpole_run("trpo", seed=1, frames_per_batch=64, total_frames=256, value_minibatch_size=512, value_epochs=3)
    try:
        timer = Timer(run.device)
        stats = run.algo.learn(run.source.next_batch(timer), timer)
        assert stats["stats/gradient_steps"] == 3.0
    finally:
        run.close()
