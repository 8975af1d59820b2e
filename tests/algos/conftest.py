"""Builders the algorithm tests share: small runs on CartPole and Pendulum, a replay minibatch of
Pendulum's shapes, and a critic member evaluated as a plain MLP."""

import pytest
import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.bench.floors.actor_critic import ensemble_member
from rlcli.config.load import validate_data
from rlcli.run import build_run


@pytest.fixture
def pendulum_run():
    """``pendulum_run(name, seed=..., **algo)``: an off-policy run on 2 Pendulum envs, 16x16 networks,
    batches of 8 after 16 frames of warm-up (built, not started; the caller closes it)."""

    def make(name: str, *, seed: int, **algo):
        return build_run(
            validate_data(
                {
                    "run": {"seed": seed, "device": "cpu"},
                    "env": {"id": "Pendulum-v1", "num_envs": 2, "vectorization": "sync"},
                    "network": {"hidden_sizes": [16, 16], "activation": "relu", "init": "default"},
                    "algo": {
                        "name": name,
                        "batch_size": 8,
                        "learning_starts": 16,
                        "replay": {"capacity": 1000},
                        **algo,
                    },
                    "collector": {"frames_per_batch": 8, "total_frames": 800},
                    "optim": {"max_grad_norm": 0.0},
                }
            )
        )

    return make


@pytest.fixture
def cartpole_run():
    """``cartpole_run(name, seed=..., num_envs=4, frames_per_batch=..., total_frames=..., output_dir=None,
    **algo)``: an on-policy run on CartPole's vector env (built, not started)."""

    def make(
        name: str, *, seed: int, num_envs: int = 4, frames_per_batch: int, total_frames: int, output_dir=None, **algo
    ):
        run = {"seed": seed, "device": "cpu"} | ({"output_dir": str(output_dir)} if output_dir else {})
        return build_run(
            validate_data(
                {
                    "run": run,
                    "env": {"id": "CartPole-v1", "num_envs": num_envs, "vectorization": "vector_entry_point"},
                    "algo": {"name": name, **algo},
                    "collector": {"frames_per_batch": frames_per_batch, "total_frames": total_frames},
                    "checkpoint": {"every_frames": 0},
                    "timing": {"enabled": False},
                }
            )
        )

    return make


def pendulum_minibatch(size: int = 5, seed: int = 0) -> TensorDict:
    """Normalized replay rows of Pendulum's shapes (3-d inputs, 1-d actions in [-2, 2]), every third
    from the second on terminated."""
    g = torch.Generator().manual_seed(seed)
    return TensorDict(
        {
            keys.INPUT: torch.randn(size, 3, generator=g),
            keys.ACTION: torch.rand(size, 1, generator=g) * 4 - 2,
            keys.REWARD: torch.randn(size, generator=g),
            keys.NEXT_INPUT: torch.randn(size, 3, generator=g),
            keys.TERMINATED: torch.arange(size) % 3 == 1,
        },
        batch_size=[size],
    )


@pytest.fixture
def minibatch():
    return pendulum_minibatch


@pytest.fixture
def critic_member():
    """``critic_member(critic, e, obs, action)``: Q of member ``e`` of a QEnsemble as a plain MLP, [B]."""

    def q(critic, e: int, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return ensemble_member(critic.net, e)(torch.cat([obs, action], -1)).squeeze(-1)

    return q
