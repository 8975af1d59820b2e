"""Probe environments: tiny tasks whose true values are known, learned in seconds.

After the idea of Andy Jones' "debugging RL without the agonizing pain":
each probe isolates one piece (value fitting, observation dependence,
discounting, policy improvement), so a failure names the broken piece.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

from rlcli.config.load import validate_data
from rlcli.run import build_run
from rlcli.trainer.loop import train


class ConstantReward(gym.Env):
    """One step, observation 0, reward 1: V = 1."""

    observation_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, True, False, {}


class RewardIsObservation(ConstantReward):
    """One step, observation +-1 at random, reward equal to it: V(s) = s."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.obs = np.array([self.np_random.choice([-1.0, 1.0])], np.float32)
        return self.obs, {}

    def step(self, action):
        return self.obs.copy(), float(self.obs[0]), True, False, {}


class DelayedReward(ConstantReward):
    """Two steps, observations 0 then 1, reward 1 at the end: V(0) = gamma, V(1) = 1."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        done = self.t == 2
        return np.ones(1, np.float32), float(done), done, False, {}


class RewardedAction(ConstantReward):
    """One step, reward 1 for action 1 and 0 for action 0: the policy must pick 1."""

    def step(self, action):
        return np.zeros(1, np.float32), float(action == 1), True, False, {}


class TruncatedForever(ConstantReward):
    """Reward 1 each step, never terminates, truncated every 5 steps: V = 1 / (1 - gamma)."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, False, False, {}


PROBES = {
    "rlcli-probe/Constant-v0": (ConstantReward, None),
    "rlcli-probe/RewardIsObservation-v0": (RewardIsObservation, None),
    "rlcli-probe/Delayed-v0": (DelayedReward, None),
    "rlcli-probe/RewardedAction-v0": (RewardedAction, None),
    "rlcli-probe/TruncatedForever-v0": (TruncatedForever, 5),
}
for env_id, (env_class, limit) in PROBES.items():
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=env_class, max_episode_steps=limit)


def trained_agent(env_id: str, algo: dict, frames: int = 8192, tmp_path=None):
    # A2C takes one gradient step per batch: give it small batches and as many steps as PPO.
    batch = 32 if algo["name"] == "a2c" else 256
    cfg = validate_data(
        {
            "run": {"seed": 0, "device": "cpu", "output_dir": str(tmp_path)},
            "env": {"id": env_id, "num_envs": 8, "vectorization": "sync"},
            "algo": algo,
            "collector": {"frames_per_batch": batch, "total_frames": frames},
            "optim": {"lr": 3e-3},
            "timing": {"enabled": False},
        }
    )
    state = train(build_run(cfg))
    assert state.status == "completed"
    return state.run.algo.agent


def value_of(agent, *observations: float) -> list[float]:
    with torch.no_grad():
        return agent.value(torch.tensor([[o] for o in observations])).tolist()


PPO = {"name": "ppo", "minibatch_size": 64, "epochs": 4, "gamma": 0.9}
A2C = {"name": "a2c", "gamma": 0.9}


@pytest.mark.parametrize("algo", [PPO, A2C], ids=["ppo", "a2c"])
def test_critic_learns_a_constant(algo, tmp_path):
    agent = trained_agent("rlcli-probe/Constant-v0", algo, tmp_path=tmp_path)
    assert value_of(agent, 0.0) == pytest.approx([1.0], abs=0.05)


def test_critic_learns_observation_dependent_values(tmp_path):
    agent = trained_agent("rlcli-probe/RewardIsObservation-v0", PPO, tmp_path=tmp_path)
    assert value_of(agent, -1.0, 1.0) == pytest.approx([-1.0, 1.0], abs=0.1)


def test_critic_discounts_a_delayed_reward(tmp_path):
    agent = trained_agent("rlcli-probe/Delayed-v0", PPO, tmp_path=tmp_path)
    assert value_of(agent, 0.0, 1.0) == pytest.approx([0.9, 1.0], abs=0.07)


def test_truncation_bootstraps_instead_of_ending_the_value(tmp_path):
    # Treating the time limit as termination would teach V ~ 1 + 0.9 + ... (5 terms) = 4.1.
    agent = trained_agent(
        "rlcli-probe/TruncatedForever-v0", {**PPO, "return_lambda": 0.0}, frames=16384, tmp_path=tmp_path
    )
    assert value_of(agent, 0.0) == pytest.approx([10.0], abs=1.0)


@pytest.mark.parametrize("algo", [PPO, A2C], ids=["ppo", "a2c"])
def test_policy_learns_the_rewarded_action(algo, tmp_path):
    agent = trained_agent("rlcli-probe/RewardedAction-v0", algo, tmp_path=tmp_path)
    with torch.no_grad():
        probs = agent.policy(torch.zeros(1, 1)).probs[0].tolist()
    assert probs[1] > 0.9


DQN = {
    "name": "dqn",
    "gamma": 0.9,
    "learning_starts": 512,
    "batch_size": 64,
    "utd_ratio": 0.25,
    "target_update_interval": 50,
    "replay": {"capacity": 10_000},
}


def q_of(agent, *observations: float) -> list[list[float]]:
    with torch.no_grad():
        return agent.q(torch.tensor([[o] for o in observations])).tolist()


def test_q_learns_a_constant_for_every_action(tmp_path):
    agent = trained_agent("rlcli-probe/Constant-v0", DQN, tmp_path=tmp_path)
    assert q_of(agent, 0.0)[0] == pytest.approx([1.0, 1.0], abs=0.05)


def test_q_discounts_a_delayed_reward(tmp_path):
    agent = trained_agent("rlcli-probe/Delayed-v0", DQN, tmp_path=tmp_path)
    first, second = q_of(agent, 0.0, 1.0)
    assert first == pytest.approx([0.9, 0.9], abs=0.07)
    assert second == pytest.approx([1.0, 1.0], abs=0.07)


@pytest.mark.parametrize("n_step", [1, 3])
def test_q_bootstraps_through_truncation(tmp_path, n_step):
    # Treating the time limit as termination would give about 4.1 (five rewards, discounted).
    agent = trained_agent("rlcli-probe/TruncatedForever-v0", {**DQN, "n_step": n_step}, frames=16384, tmp_path=tmp_path)
    assert q_of(agent, 0.0)[0] == pytest.approx([10.0, 10.0], abs=1.0)


def test_greedy_action_is_the_rewarded_one(tmp_path):
    agent = trained_agent("rlcli-probe/RewardedAction-v0", DQN, tmp_path=tmp_path)
    zero, one = q_of(agent, 0.0)[0]
    assert one == pytest.approx(1.0, abs=0.1) and zero == pytest.approx(0.0, abs=0.1)
