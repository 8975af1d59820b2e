"""The build context: sizes from the spaces, and the parts every algorithm makes alike."""

import gymnasium as gym
import numpy as np
import torch

from rlcli.algos.context import BuildContext
from rlcli.config.load import validate_data


def context(env_id: str, **env) -> BuildContext:
    cfg = validate_data(
        {
            "env": {"id": env_id, "num_envs": 2, **env},
            "algo": {"name": "sac", "batch_size": 8, "learning_starts": 8},
            "collector": {"frames_per_batch": 8, "total_frames": 80},
            "optim": {"lr": 0.01, "lr_schedule": "linear"},
        }
    )
    probe = gym.make(env_id)
    try:
        return BuildContext(
            probe.observation_space,
            probe.action_space,
            network=cfg.network,
            env=cfg.env,
            collector=cfg.collector,
            optim=cfg.optim,
            device=torch.device("cpu"),
            seed=0,
        )
    finally:
        probe.close()


def test_sizes_come_from_the_spaces():
    ctx = context("Pendulum-v1")
    assert (ctx.encoder().out_features, ctx.act_dim) == (3, 1)


def test_the_observation_normalizer_follows_the_env_section():
    on = context("Pendulum-v1", normalize_observation=True, clip_observation=3.0).observation_normalizer()
    off = context("Pendulum-v1", normalize_observation=False).observation_normalizer()
    assert on.enabled and on.clip == 3.0 and on.stats.mean.shape == (3,)
    assert not off.enabled
    obs = torch.full((4, 3), 100.0)
    assert torch.equal(off(obs), obs) and float(on(obs).max()) == 3.0


def test_action_bounds_are_the_box_on_the_device():
    bounds = context("Pendulum-v1").action_bounds()
    assert bounds.low.tolist() == [-2.0] and bounds.high.tolist() == [2.0]
    assert bounds.low.device == torch.device("cpu")


def test_a_gradient_step_takes_the_optim_section_and_schedules_over_the_runs_iterations():
    ctx = context("Pendulum-v1")
    weight = torch.nn.Parameter(torch.zeros(2))
    step = ctx.gradient_step([weight])
    assert step.lr == 0.01
    for _ in range(5):
        step.end_iteration()
    # 10 iterations of 8 frames: half-way down the linear schedule after 5.
    assert np.isclose(step.lr, 0.005)
