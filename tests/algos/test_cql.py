"""CQL's Lagrange version: the effective conservative weight starts at ``conservative_weight`` and its
multiplier moves the way the gap asks (Kumar et al., 2020, eq. 30; their code's ``log_alpha_prime``)."""

import math

import pytest
import torch

from rlcli.algos.cql import conservative_gap, cql_critic_loss
from rlcli.config.errors import ConfigError
from rlcli.config.load import validate_data
from rlcli.run import build_run
from rlcli.timing import Timer
from support.offline import random_dataset


def cql_run(*, seed: int = 0, **algo):
    return build_run(
        validate_data(
            {
                "run": {"seed": seed, "device": "cpu"},
                "env": {"id": "Pendulum-v1", "num_envs": 2, "vectorization": "sync"},
                "network": {"hidden_sizes": [16, 16], "activation": "relu", "init": "default"},
                "algo": {"name": "cql", "batch_size": 32, "num_random_actions": 4, **algo},
                "data": {"dataset": random_dataset("Pendulum-v1"), "total_steps": 200, "steps_per_iteration": 10},
                "optim": {"lr": 3e-3, "max_grad_norm": 0.0},
            }
        )
    )


def _sample(run, size: int = 32):
    return run.algo.replay.sample(size, torch.Generator().manual_seed(3))


def test_lagrange_weight_starts_at_conservative_weight_and_scales_the_gap_by_it():
    run = cql_run(lagrange=True, conservative_weight=5.0, target_action_gap=2.0)
    try:
        agent, cfg = run.algo.agent, run.algo.cfg
        assert float(agent.log_weight.detach()) == 0.0
        batch = _sample(run)
        state = torch.random.get_rng_state()
        terms = cql_critic_loss(
            agent, batch, gamma=0.99, alpha=run.algo.alpha, cfg=cfg, generator=torch.Generator().manual_seed(1)
        )
        # The same gap, recomputed with the same draws, weighed by hand: 5 * sum_e (gap_e - 2).
        torch.random.set_rng_state(state)
        q_data = agent.critic(batch["input"], batch["action"])
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            agent.actor(batch["next_input"], generator)
        gap = conservative_gap(agent, batch, q_data, samples=4, temperature=1.0, generator=generator).detach()
        assert terms["stats/gap"] == pytest.approx(float(gap.mean()), rel=1e-5)
        assert float(terms["loss/conservative"]) == pytest.approx(float(5.0 * (gap - 2.0).sum()), rel=1e-5)
        # The multiplier's loss: -mean_e 5 * m * (gap_e - 2), so d/d(log m) at m = 1 is -5 * mean(gap - 2).
        terms["loss/weight"].backward()
        assert float(agent.log_weight.grad) == pytest.approx(-5.0 * float((gap - 2.0).mean()), rel=1e-5)
        stats = run.algo.learn(run.source.next_batch(Timer(run.device)), Timer(run.device))
        # The first iteration moved the multiplier a little: the reported weight is still near 5, not 25.
        assert 4.0 < stats["stats/conservative_weight"] < 6.0
    finally:
        run.close()


@pytest.mark.parametrize(("target_gap", "direction"), [(0.0, 1), (1000.0, -1)])
def test_lagrange_weight_moves_toward_the_target_gap(target_gap, direction):
    """A target far below the gap raises the weight (more conservatism); one far above lowers it."""
    run = cql_run(lagrange=True, conservative_weight=1.0, target_action_gap=target_gap)
    try:
        timer = Timer(run.device)
        gaps, weights = [], []
        for _ in range(5):
            stats = run.algo.learn(run.source.next_batch(timer), timer)
            gaps.append(stats["stats/gap"])
            weights.append(stats["stats/conservative_weight"])
        # Against a target of 0 the gap must stay positive for the weight to rise: check the premise.
        assert all((gap - target_gap) * direction > 0 for gap in gaps), gaps
        assert all((later - earlier) * direction > 0 for earlier, later in zip(weights, weights[1:])), weights
        assert math.log(weights[-1]) * direction > 0
    finally:
        run.close()


def test_fixed_weight_keeps_its_weight_and_has_no_weight_loss():
    run = cql_run(lagrange=False, conservative_weight=3.0)
    try:
        timer = Timer(run.device)
        before = float(run.algo.agent.log_weight)
        stats = run.algo.learn(run.source.next_batch(timer), timer)
        assert stats["stats/conservative_weight"] == 3.0
        assert "loss/weight" not in stats
        assert float(run.algo.agent.log_weight) == before
    finally:
        run.close()


def test_lagrange_with_a_zero_weight_is_refused():
    with pytest.raises(ConfigError) as info:
        cql_run(lagrange=True, conservative_weight=0.0)
    message = info.value.render()
    assert "algo.conservative_weight" in message and "lagrange" in message
