"""Env state as plain data: captured from real vector envs mid-episode, written to disk, loaded
with weights_only and restored into freshly built envs, which then step exactly as the
originals did; the kinds of attributes kept, and the envs a state does not fit. The subprocess
envs' test forks workers and runs in the integration layer."""

from collections import deque

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlcli.collectors import envstate
from rlcli.collectors.envstate import EnvStateError
from rlcli.config.schema import EnvConfig
from rlcli.envs import make_envs

CONFIGS = {
    "cartpole-sync": EnvConfig(id="CartPole-v1", num_envs=3, vectorization="sync", max_episode_steps=15),
    "cartpole-vector": EnvConfig(
        id="CartPole-v1", num_envs=3, vectorization="vector_entry_point", max_episode_steps=15
    ),
    "pendulum-sync": EnvConfig(id="Pendulum-v1", num_envs=2, vectorization="sync", max_episode_steps=15),
}


def actions_for(cfg: EnvConfig, steps: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    if cfg.id == "CartPole-v1":
        return [rng.integers(0, 2, cfg.num_envs) for _ in range(steps)]
    return [rng.uniform(-2, 2, (cfg.num_envs, 1)).astype(np.float32) for _ in range(steps)]


def rollout(envs, actions) -> list[tuple]:
    """Everything each step returned, copied: observations, rewards, ends and final observations."""
    seen = []
    for action in actions:
        obs, reward, terminated, truncated, info = envs.step(action)
        final = np.stack(info["final_obs"][info["_final_obs"]]) if "final_obs" in info else None
        seen.append((obs.copy(), reward.copy(), terminated.copy(), truncated.copy(), final))
    return seen


def statistics(envs) -> tuple:
    return list(envs.return_queue), list(envs.length_queue), envs.episode_count


def assert_same_steps(expected: list[tuple], got: list[tuple]) -> None:
    assert len(expected) == len(got)
    for t, (want, have) in enumerate(zip(expected, got)):
        for a, b in zip(want, have):
            assert (a is None and b is None) or np.array_equal(a, b), f"step {t} differs"


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_restored_state_steps_exactly_like_the_envs_it_was_captured_from(tmp_path, name):
    cfg = CONFIGS[name]
    envs = make_envs(cfg, return_window=4)
    try:
        envs.reset(seed=1)
        rollout(envs, actions_for(cfg, 10, seed=2))
        state = envstate.capture(envs)
        after = actions_for(cfg, 40, seed=3)
        expected = rollout(envs, after)
        expected_statistics = statistics(envs)
    finally:
        envs.close()
    # Written only now: the capture is a copy that the steps since have not changed.
    torch.save(state, tmp_path / "envs.pt")
    assert state["exact"] is True
    # Episodes end after the capture, so step counters, autoreset flags and generators all count;
    # CartPole's end both ways (pole down: terminated; clock: truncated).
    assert any(step[3].any() for step in expected)
    if cfg.id == "CartPole-v1":
        assert any(step[2].any() for step in expected)

    fresh = make_envs(cfg, return_window=4)
    try:
        fresh.reset(seed=12345)
        rollout(fresh, actions_for(cfg, 7, seed=4))
        envstate.restore(fresh, torch.load(tmp_path / "envs.pt", weights_only=True))
        assert_same_steps(expected, rollout(fresh, after))
        assert statistics(fresh) == expected_statistics
    finally:
        fresh.close()


class Holder(gym.Env):
    """An env whose attributes hold every kind of plain data, and some that is not."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self):
        self.count = 3
        self.label = "left"
        self.nothing = None
        self.scale = np.float32(0.5)
        self.flag = np.bool_(True)
        self.strided = np.arange(6.0).reshape(2, 3)[:, ::2]
        self.small = np.array([1, 2], np.int8)
        self.window = deque([np.float64(1.5), 2.5], maxlen=4)
        self.pair = (1, "a")
        self.items = [np.int64(2), np.zeros(2, np.float32)]
        self.table = {"a": 1}
        self.callback = len

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, False, False, {}


def test_plain_attributes_come_back_with_their_types_and_others_are_left_alone(tmp_path):
    envs = gym.vector.SyncVectorEnv([Holder])
    envs.reset(seed=3)
    (holder,) = envs.envs
    state = envstate.capture(envs)
    generator = holder.np_random
    draws = generator.random(3)
    torch.save(state, tmp_path / "holder.pt")
    kept = set(state["sub_envs"][0][0]["attrs"])
    assert {
        "count",
        "label",
        "nothing",
        "scale",
        "flag",
        "strided",
        "small",
        "window",
        "pair",
        "items",
        "_np_random",
    } <= kept
    assert not {"table", "callback"} & kept

    for name in ("count", "label", "scale", "flag", "strided", "small", "window", "pair", "items"):
        setattr(holder, name, "changed")
    holder.table, holder.callback = {"b": 2}, print
    envstate.restore(envs, torch.load(tmp_path / "holder.pt", weights_only=True))

    assert holder.count == 3 and type(holder.count) is int and holder.label == "left" and holder.nothing is None
    assert type(holder.scale) is np.float32 and holder.scale == 0.5
    assert type(holder.flag) is np.bool_ and holder.flag
    assert holder.strided.dtype == np.float64 and np.array_equal(holder.strided, [[0.0, 2.0], [3.0, 5.0]])
    assert holder.small.dtype == np.int8 and np.array_equal(holder.small, [1, 2])
    assert type(holder.window) is deque and holder.window.maxlen == 4 and list(holder.window) == [1.5, 2.5]
    assert type(holder.window[0]) is np.float64 and type(holder.window[1]) is float
    assert holder.pair == (1, "a") and type(holder.pair) is tuple
    assert type(holder.items) is list and type(holder.items[0]) is np.int64
    assert holder.items[1].dtype == np.float32
    # Not plain data: neither saved nor touched.
    assert holder.table == {"b": 2} and holder.callback is print
    # The generator is set back in place, to the draws it had not made yet.
    assert holder.np_random is generator
    np.testing.assert_array_equal(generator.random(3), draws)


def test_restored_arrays_do_not_share_memory_with_the_state():
    envs = gym.vector.SyncVectorEnv([Holder])
    state = envstate.capture(envs)
    (holder,) = envs.envs
    envstate.restore(envs, state)
    holder.small[0] = 100
    envstate.restore(envs, state)
    assert np.array_equal(holder.small, [1, 2])


def test_the_state_of_envs_of_another_kind_is_refused_by_name():
    sync = make_envs(CONFIGS["cartpole-sync"])
    vector = make_envs(CONFIGS["cartpole-vector"])
    try:
        with pytest.raises(EnvStateError) as info:
            envstate.restore(vector, envstate.capture(sync))
        assert str(info.value) == (
            "the saved envs are RecordEpisodeStatistics > SyncVectorEnv, the envs built "
            "now are RecordEpisodeStatistics > CartPoleVectorEnv"
        )
        with pytest.raises(EnvStateError):
            envstate.restore(sync, envstate.capture(vector))
    finally:
        sync.close()
        vector.close()


def test_the_state_of_another_number_of_sub_envs_is_refused():
    three = make_envs(CONFIGS["cartpole-sync"])
    two = make_envs(CONFIGS["cartpole-sync"].model_copy(update={"num_envs": 2}))
    try:
        with pytest.raises(EnvStateError):
            envstate.restore(two, envstate.capture(three))
    finally:
        three.close()
        two.close()


# gymnasium's AsyncVectorEnv forks its workers through multiprocessing: a real child process.
@pytest.mark.integration
def test_subprocess_envs_are_not_exact_and_keep_their_shared_memory():
    envs = make_envs(EnvConfig(id="CartPole-v1", num_envs=2, vectorization="async"))
    try:
        obs, _ = envs.reset(seed=0)
        state = envstate.capture(envs)
        # The workers' envs and the base vector env (views of the workers' memory) are left out.
        assert state["exact"] is False and state["sub_envs"] is None
        assert [layer["class"] for layer in state["vector"]] == ["RecordEpisodeStatistics"]
        envstate.restore(envs, state)
        stepped, *_ = envs.step(np.array([0, 1]))
        assert stepped.shape == obs.shape and not np.array_equal(stepped, obs)
    finally:
        envs.close()


def test_a_physics_engine_state_is_not_exact():
    pytest.importorskip("mujoco", reason="the mujoco extra: pip install -e '.[mujoco]'")
    envs = make_envs(EnvConfig(id="InvertedPendulum-v5", num_envs=1))
    try:
        envs.reset(seed=0)
        assert envstate.capture(envs)["exact"] is False
    finally:
        envs.close()
