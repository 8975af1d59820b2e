"""The envpool backend against gymnasium's own envs: the same spaces, the same dynamics from the same state (set
into gymnasium's env from EnvPool's first observation: EnvPool cannot set a state), the same Atari game score
for a fixed action sequence, seeds, ``NEXT_STEP`` resets, lost lives, and bad input refused with exit 2.
Skipped only where envpool is absent (``.ci/run`` installs the envpool extra)."""

from __future__ import annotations

import importlib.util
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlcli.collectors import envstate
from rlcli.config.load import load_config, validate_data
from rlcli.envs import LIFE_LOST, EnvPoolVector, eval_envs, make_env, make_envs
from rlcli.play.playback import evaluate_run
from rlcli.run import build_run
from rlcli.trainer.loop import train
from support.cli import assert_bad_input

pytest.importorskip("envpool")


def _env_cfg(env_id: str, backend: str = "envpool", **env):
    data = {
        "env": {"id": env_id, "backend": backend, "num_envs": 1, **env},
        "algo": {"name": "ppo"},
        "run": {"device": "cpu"},
    }
    return validate_data(data).env


REFERENCE = {"Taxi-v3": "Taxi-v4"}
"""EnvPool id -> gymnasium's id of the same env where gymnasium has moved on (its Taxi-v3 is deprecated)."""


def _reference(env_id: str) -> gym.Env:
    return gym.make(REFERENCE.get(env_id, env_id))


def _gym_state(env_id: str, env: gym.Env, obs: np.ndarray) -> None:
    """Put gymnasium's ``env`` in the state EnvPool's first observation ``obs`` shows."""
    inner = env.unwrapped
    if env_id in ("CartPole-v1", "MountainCar-v0"):
        inner.state = np.asarray(obs, dtype=np.float64)
    elif env_id == "Pendulum-v1":
        inner.state = np.array([np.arctan2(obs[1], obs[0]), obs[2]])
    elif env_id == "Acrobot-v1":
        inner.state = np.array([np.arctan2(obs[1], obs[0]), np.arctan2(obs[3], obs[2]), obs[4], obs[5]])
    elif env_id == "Taxi-v3":
        inner.s = int(obs)
    elif env_id == "HalfCheetah-v5":
        # The observation leaves out the root's x, which no force depends on.
        inner.set_state(np.concatenate([[0.0], obs[:8]]), obs[8:])
    else:
        raise AssertionError(env_id)


SET_STATE = ["CartPole-v1", "MountainCar-v0", "Pendulum-v1", "Acrobot-v1", "Taxi-v3", "HalfCheetah-v5"]


@pytest.mark.parametrize("env_id", SET_STATE + ["LunarLander-v3", "LunarLanderContinuous-v3"])
def test_spaces_are_gymnasiums(env_id):
    pytest.importorskip("mujoco" if "Cheetah" in env_id else "numpy")
    if "Lunar" in env_id:
        pytest.importorskip("Box2D")
    envs = EnvPoolVector(env_id, 3, {})
    reference = _reference(env_id)
    if "Lunar" in env_id:
        # EnvPool 1.2.5 declares LunarLander's observations unbounded (FLT_MIN to FLT_MAX); shape and dtype agree.
        space = envs.single_observation_space
        assert (space.shape, space.dtype) == (reference.observation_space.shape, reference.observation_space.dtype)
    else:
        assert envs.single_observation_space == reference.observation_space
    assert envs.single_action_space == reference.action_space
    assert envs.num_envs == 3


@pytest.mark.parametrize("env_id", SET_STATE)
def test_the_same_actions_from_the_same_state_give_the_same_observations(env_id):
    if "Cheetah" in env_id:
        pytest.importorskip("mujoco")
    envs = EnvPoolVector(env_id, 1, {})
    reference = _reference(env_id)
    obs, _ = envs.reset(seed=7)
    reference.reset(seed=0)
    _gym_state(env_id, reference, obs[0])
    rng = np.random.default_rng(0)
    steps = 0
    for _ in range(60):
        if isinstance(reference.action_space, gym.spaces.Discrete):
            action = int(rng.integers(reference.action_space.n))
        else:
            space = reference.action_space
            action = rng.uniform(space.low, space.high).astype(np.float32)
        obs, reward, terminated, truncated, _ = envs.step(np.asarray([action]))
        expected, expected_reward, expected_terminated, _, _ = reference.step(action)
        steps += 1
        np.testing.assert_allclose(obs[0], expected, rtol=1e-4, atol=1e-4, err_msg=f"step {steps}")
        assert reward[0] == pytest.approx(expected_reward, rel=1e-4, abs=1e-4)
        assert bool(terminated[0]) == expected_terminated
        if expected_terminated:
            break
    assert steps >= 5


def test_a_seed_gives_the_same_episodes_and_another_seed_others():
    def rollout(seed):
        envs = EnvPoolVector("CartPole-v1", 4, {})
        first, _ = envs.reset(seed=seed)
        out = [first]
        for t in range(40):
            out.append(envs.step(np.full(4, t % 2))[0])
        return np.stack(out)

    same = rollout(3)
    np.testing.assert_array_equal(same, rollout(3))
    assert not np.allclose(same[0], rollout(4)[0])


def test_episodes_end_at_max_episode_steps_and_reset_in_the_next_step():
    envs = make_envs(_env_cfg("Pendulum-v1", num_envs=2, max_episode_steps=5))
    envs.reset(seed=0)
    for _ in range(4):
        _, _, terminated, truncated, _ = envs.step(np.zeros((2, 1), np.float32))
        assert not truncated.any() and not terminated.any()
    _, _, _, truncated, _ = envs.step(np.zeros((2, 1), np.float32))
    assert truncated.all()
    # NEXT_STEP: the step after the end is the reset, and the episode was recorded whole.
    assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    assert list(envs.length_queue) == [5, 5]


def test_the_pool_state_is_native_so_a_resume_reseeds():
    envs = make_envs(_env_cfg("CartPole-v1"))
    envs.reset(seed=0)
    assert envstate.capture(envs)["exact"] is False


def test_a_trained_run_evaluates_and_plays_one_env(tmp_path):
    cfg = load_config(
        "ppo_cartpole",
        [
            'env.backend="envpool"',
            "collector.total_frames=2048",
            f'run.output_dir="{tmp_path}"',
            "eval.final_episodes=0",
        ],
    )
    run = build_run(cfg)
    state = train(run)
    assert state.frames >= 2048
    report = evaluate_run(state.run_dir, episodes=4, seed=0)
    returns = report.result.to_json()["returns"]
    assert len(returns) == 4 and all(r >= 8 for r in returns)
    env = make_env(cfg.env)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4,) and eval_envs(cfg.env, 3).num_envs == 3
    env.close()


ale = pytest.mark.skipif(importlib.util.find_spec("ale_py") is None, reason="ale-py (the atari extra) is absent")


@ale
def test_atari_plays_the_same_first_life_as_ale_pys_vector_env():
    # No random no-ops and no sticky actions make both envs deterministic: a fixed action sequence must show the
    # same newest frame and score until the first lost life. (After it the two continue the game differently:
    # ale-py's env is made to press FIRE for the step after a lost life, EnvPool's presses it for one frame in a
    # reset step; docs/atari.md.)
    kwargs = {"noop_max": 0, "repeat_action_probability": 0.0, "life_loss_info": True}
    mine = make_envs(_env_cfg("ALE/Breakout-v5", kwargs=kwargs))
    reference = make_envs(
        _env_cfg("ALE/Breakout-v5", backend="gymnasium", vectorization="vector_entry_point", kwargs=kwargs)
    )
    assert mine.single_observation_space == reference.single_observation_space
    assert mine.single_action_space == reference.single_action_space
    first, _ = mine.reset(seed=0)
    expected, _ = reference.reset(seed=0)
    np.testing.assert_array_equal(first[:, -1], expected[:, -1])
    rng = np.random.default_rng(1)
    score = steps = 0.0
    while True:
        action = np.asarray([rng.integers(4)])
        obs, reward, _, _, info = mine.step(action)
        expected, expected_reward, _, _, expected_info = reference.step(action)
        steps += 1
        np.testing.assert_array_equal(obs[:, -1], expected[:, -1], err_msg=f"step {steps}")
        assert reward[0] == expected_reward[0]
        score += float(reward[0])
        assert info[LIFE_LOST][0] == expected_info[LIFE_LOST][0]
        if info[LIFE_LOST][0]:
            break
    assert steps >= 20 and info["lives"][0] == expected_info["lives"][0] == 4


@ale
def test_atari_lost_lives_end_no_episode_and_the_return_is_the_games():
    envs = make_envs(_env_cfg("ALE/Breakout-v5", kwargs={"life_loss_info": True}, num_envs=2))
    envs.reset(seed=0)
    lost = 0
    while len(envs.return_queue) == 0:
        _, _, terminated, _, info = envs.step(np.ones(2, np.int64))
        lost += int(info[LIFE_LOST].sum())
        assert not (terminated & info[LIFE_LOST]).any()
    # Five lives: at least four lost before the first game ended.
    assert lost >= 4


@pytest.mark.parametrize(
    ("setting", "fragments"),
    [
        ('env.id="NoSuchEnv-v0"', ("env.id", "EnvPool", "has no env 'NoSuchEnv-v0'", "classic_control")),
        ("env.kwargs.wind=3", ("env.kwargs.wind", "cannot express 'wind'", "max_episode_steps")),
    ],
)
def test_what_envpool_cannot_make_is_refused(cli, setting, fragments):
    assert_bad_input(cli("validate", "ppo_cartpole", "--set", 'env.backend="envpool"', "--set", setting), *fragments)


@ale
def test_an_atari_option_envpool_lacks_is_refused(cli):
    result = cli("validate", "ppo_breakout", "--set", 'env.backend="envpool"', "--set", "env.kwargs.maxpool=false")
    assert_bad_input(result, "env.kwargs.maxpool", "always max-pools")


def test_a_missing_envpool_names_its_extra(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "envpool", None)
    assert_bad_input(
        cli("validate", "ppo_cartpole", "--set", 'env.backend="envpool"'),
        "env.backend",
        "envpool extra",
        "rlcli[envpool]",
    )


def test_observations_reach_the_policy_as_gymnasiums_do():
    envs = make_envs(_env_cfg("CartPole-v1", num_envs=2))
    obs, _ = envs.reset(seed=0)
    assert obs.dtype == np.float32 and torch.from_numpy(obs).shape == (2, 4)
