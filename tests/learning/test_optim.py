"""Optimizer and schedule tables, and the shared gradient step."""

import math

import pytest
import torch

from rlcli.config.schema import OptimConfig
from rlcli.learning.optim import GradientStep, make_optimizer, make_scheduler
from rlcli.timing import Timer


def rates(schedule: str, iterations: int = 4, steps: int = 6) -> list[float]:
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = make_optimizer(OptimConfig(lr=0.1, lr_schedule=schedule), [param])
    scheduler = make_scheduler(OptimConfig(lr_schedule=schedule), optimizer, iterations)
    seen = []
    for _ in range(steps):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return seen


def test_constant_schedule_keeps_the_rate():
    assert rates("constant") == [0.1] * 6


def test_linear_schedule_reaches_zero_at_the_last_iteration_and_stays_there():
    assert rates("linear") == pytest.approx([0.1, 0.075, 0.05, 0.025, 0.0, 0.0])


def test_cosine_schedule_follows_half_a_cosine():
    expected = [0.05 * (1 + math.cos(math.pi * min(k / 4, 1.0))) for k in range(6)]
    assert rates("cosine") == pytest.approx(expected)


@pytest.mark.parametrize("name", ["adam", "adamw", "sgd", "rmsprop"])
def test_every_optimizer_takes_a_step_downhill(name):
    param = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    step = GradientStep(OptimConfig(name=name, lr=0.1, max_grad_norm=0.0), [param], iterations=10)
    before = float(param.detach().square().sum())
    step(param.square().sum(), Timer(torch.device("cpu")))
    assert float(param.detach().square().sum()) < before


def test_gradient_clipping_bounds_the_global_norm():
    param = torch.nn.Parameter(torch.tensor([3.0, 4.0]))
    step = GradientStep(OptimConfig(name="sgd", lr=1.0, max_grad_norm=0.5), [param], iterations=10)
    step((param * torch.tensor([30.0, 40.0])).sum(), Timer(torch.device("cpu")))
    # The gradient (30, 40) has norm 50; clipped to 0.5 it moves the parameter by (0.3, 0.4).
    torch.testing.assert_close(param.detach(), torch.tensor([2.7, 3.6]))


def test_state_round_trips_through_load_state_dict():
    def fresh():
        param = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
        return param, GradientStep(OptimConfig(lr=0.1, lr_schedule="linear"), [param], iterations=10)

    param, step = fresh()
    for _ in range(3):
        step(param.square().sum(), Timer(torch.device("cpu")))
        step.end_iteration()
    other_param, other = fresh()
    other.load_state_dict(step.state_dict())
    assert other.lr == pytest.approx(step.lr) and other.lr < 0.1
    assert other.optimizer.state_dict()["state"][0]["step"] == step.optimizer.state_dict()["state"][0]["step"]


@pytest.mark.parametrize("scope", ["all", "networks"])
def test_clip_scope_networks_bounds_each_networks_norm_apart(scope):
    policy = torch.nn.Parameter(torch.zeros(3))
    value = torch.nn.Parameter(torch.zeros(3))
    cfg = OptimConfig(name="sgd", lr=1.0, max_grad_norm=1.0, clip_scope=scope)
    step = GradientStep(cfg, [policy, value], iterations=1, networks=[[policy], [value]])
    # A small policy gradient beside a large value gradient, as a critic's early regression gives.
    step((0.3 * policy.sum() + 100.0 * value.sum()), Timer(torch.device("cpu")))
    moved = (policy.detach().norm().item(), value.detach().norm().item())
    if scope == "networks":
        # Each part clipped on its own: the policy's step is its own gradient, the value's cut to 1.
        assert moved == pytest.approx((0.3 * math.sqrt(3), 1.0), rel=1e-5)
    else:
        # One norm over both: the policy's step shrinks by the value's size.
        assert moved[0] < 0.01 and math.hypot(*moved) == pytest.approx(1.0, rel=1e-5)


def test_an_actor_critics_networks_split_its_weights_between_policy_and_value(tmp_path):
    from rlcli.config.load import load_config
    from rlcli.run import build_run

    # A shared encoder (cartpole's MLP has none apart) and a Gaussian head's log-std, both the policy's.
    for preset in ("ppo_cartpole", "ppo_lunarlandercontinuous"):
        cfg = load_config(preset, [f'run.output_dir="{tmp_path}"', 'run.device="cpu"', "env.num_envs=2"])
        run = build_run(cfg)
        try:
            agent = run.algo.agent
            policy, value = agent.networks()
            assert {id(p) for p in policy} | {id(p) for p in value} == {id(p) for p in agent.parameters()}
            assert not {id(p) for p in policy} & {id(p) for p in value}
            assert {id(p) for p in agent.value.parameters()} <= {id(p) for p in value}
            assert {id(p) for p in agent.policy.parameters()} <= {id(p) for p in policy}
        finally:
            run.close()
