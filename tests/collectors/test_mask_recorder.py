"""Action masks from the envs (``rlcli.envs.masks``: a Dict observation's mask moved to info, where a
run's masks come from) and on their way to the agent (``rlcli.collectors.mask_recorder``), in the evaluator too."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode

from rlcli.config.load import validate_data
from rlcli.envs import make_env, make_envs
from rlcli.envs.masks import find_masks
from rlcli.run import build_run
from support.paths import env_packages_importable


@pytest.fixture(autouse=True)
def _test_envs():
    env_packages_importable()
    import rlcli_test_envs  # noqa: F401


def env_config(env_id: str, **env):
    return validate_data(
        {
            "run": {"seed": 0, "device": "cpu"},
            "env": {"id": env_id, "num_envs": 3, **env},
            "algo": {"name": "ppo", "minibatch_size": 32},
            "collector": {"frames_per_batch": 48, "total_frames": 96},
            "eval": {"final_episodes": 0},
        }
    )


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_a_dict_observations_mask_moves_to_info_in_vector_envs(mode):
    cfg = env_config("RlcliTest/MaskedPicks-v0", max_episode_steps=3)
    import gymnasium as gym

    from rlcli.envs.masks import VectorMaskFromObservation

    raw = gym.make_vec(cfg.env.id, num_envs=3, vector_kwargs={"autoreset_mode": mode}, max_episode_steps=3)
    envs = VectorMaskFromObservation(raw)
    assert list(envs.single_observation_space.spaces) == ["target"]
    obs, info = envs.reset(seed=1)
    assert set(obs) == {"target"} and info["action_mask"].shape == (3, 7)
    for _ in range(7):
        obs, _, terminated, truncated, info = envs.step(envs.action_space.sample())
        assert set(obs) == {"target"} and info["action_mask"].shape == (3, 7)
        if mode is AutoresetMode.SAME_STEP and (terminated | truncated).any():
            ended = terminated | truncated
            assert all(set(o) == {"target"} for o in info["final_obs"][ended])
            final = info["final_info"]["action_mask"][ended]
            # Each sub-action's mask forbids exactly one value.
            assert (final[:, :3].sum(1) == 2).all() and (final[:, 3:].sum(1) == 3).all()
    envs.close()


def test_single_envs_move_the_mask_too_and_none_leaves_the_observation_as_it_is():
    env = make_env(env_config("RlcliTest/MaskedPicks-v0").env)
    obs, info = env.reset(seed=0)
    assert set(obs) == {"target"} and info["action_mask"].shape == (7,)
    obs, *_, info = env.step(env.action_space.sample())
    assert set(obs) == {"target"} and "action_mask" in info
    untouched = make_env(env_config("RlcliTest/MaskedPicks-v0", action_mask="none").env)
    assert set(untouched.reset(seed=0)[0]) == {"target", "action_mask"}


@pytest.mark.parametrize(
    ("env_id", "setting", "found"),
    [
        ("Taxi-v4", "auto", "info"),
        ("Taxi-v4", "info", "info"),
        ("CartPole-v1", "auto", None),
        ("RlcliTest/MaskedPicks-v0", "auto", "observation"),
        ("RlcliTest/MaskedPicks-v0", "observation", "observation"),
        ("RlcliTest/MaskedRecall-v0", "auto", "info"),
    ],
)
def test_where_masks_come_from(env_id, setting, found):
    cfg = env_config(env_id, action_mask=setting)
    envs = make_envs(cfg.env)
    try:
        assert find_masks(cfg.env, envs, seed=0, source=None) == found
    finally:
        envs.close()


def test_auto_finds_no_masks_for_an_algorithm_that_cannot_use_them():
    cfg = validate_data(
        {
            "env": {"id": "Taxi-v4", "num_envs": 2},
            "algo": {"name": "ppo", "minibatch_size": 16},
            "collector": {"frames_per_batch": 32, "total_frames": 64},
        }
    )
    run = build_run(cfg.model_copy(update={"env": cfg.env.model_copy(update={"action_mask": "none"})}))
    try:
        assert run.source.action_mask is None and run.source.carry.mask is None
    finally:
        run.close()


def invalid_actions(evaluator) -> int:
    return sum(env.get_wrapper_attr("invalid_actions") for env in evaluator.envs.envs)


@pytest.mark.parametrize("deterministic", [True, False])
def test_evaluation_acts_under_the_masks(deterministic):
    from rlcli.play.evaluation import Evaluator

    cfg = env_config("RlcliTest/CountedTaxi-v0", action_mask="info", max_episode_steps=30)
    run = build_run(cfg)
    try:
        evaluator = Evaluator(run.algo.agent, cfg.env, episodes=4, deterministic=deterministic, seed=0, device="cpu")
        evaluator()
        assert invalid_actions(evaluator) == 0
        # The same untrained policy without the masks bumps into walls.
        evaluator.masks = False
        evaluator()
        assert invalid_actions(evaluator) > 0
        evaluator.close()
    finally:
        run.close()


def test_the_collector_takes_no_forbidden_action_with_a_dict_mask_and_multidiscrete_actions():
    from rlcli.timing import Timer

    run = build_run(env_config("RlcliTest/MaskedPicks-v0"))
    try:
        assert run.source.action_mask == "observation"
        batch = run.source.next_batch(Timer(run.device))
        action, mask = batch["action"], batch["action_mask"]
        assert action.shape == (16, 3, 2) and mask.shape == (16, 3, 7)
        flat = torch.cat([action[..., :1], action[..., 1:] + 3], -1)
        assert mask.gather(-1, flat).all()
        assert sum(run.source.envs.unwrapped.get_attr("invalid_actions")) == 0
    finally:
        run.close()


def test_as_masks_reads_bool_and_integer_masks():
    from rlcli.collectors.mask_recorder import as_masks

    assert as_masks(np.array([1, 0, 1], dtype=np.int8)).tolist() == [True, False, True]
    assert as_masks(np.array([True, False])).dtype == np.bool_


def test_collect_plays_under_the_masks_epsilon_included():
    from rlcli.datasets.recording.policy import Acting, play

    cfg = env_config("RlcliTest/CountedTaxi-v0", action_mask="info", max_episode_steps=40)
    run = build_run(cfg)
    env = make_env(cfg.env)
    try:
        episodes = play(env, run.algo.agent, Acting(deterministic=False, epsilon=0.5, seed=1), steps=200, device="cpu")
        assert sum(len(e["actions"]) for e in episodes) == 200
        assert env.get_wrapper_attr("invalid_actions") == 0
        play(env, run.algo.agent, Acting(deterministic=False, seed=1, masks=False), steps=200, device="cpu")
        assert env.get_wrapper_attr("invalid_actions") > 0
    finally:
        env.close()
        run.close()


def test_a_multidiscrete_mask_for_epsilons_random_action():
    from gymnasium import spaces

    from rlcli.datasets.recording.policy import _sample_mask

    space = spaces.MultiDiscrete([3, 4])
    mask = _sample_mask(space, {"action_mask": np.array([0, 1, 0, 1, 1, 0, 0], dtype=np.int8)})
    assert [m.tolist() for m in mask] == [[0, 1, 0], [1, 1, 0, 0]]
    for _ in range(20):
        action = space.sample(mask=mask)
        assert action[0] == 1 and action[1] in (0, 1)


@pytest.mark.parametrize("algo", ["a2c", "reinforce", "dqn"])
def test_every_algorithm_that_masks_trains_on_taxi_without_an_invalid_action(algo, tmp_path):
    from rlcli.trainer.loop import train

    extra = {"ppo": {"minibatch_size": 32}, "dqn": {"learning_starts": 64, "batch_size": 16}}.get(algo, {})
    cfg = validate_data(
        {
            "run": {"seed": 0, "device": "cpu", "output_dir": str(tmp_path)},
            "env": {"id": "RlcliTest/CountedTaxi-v0", "num_envs": 4, "max_episode_steps": 20},
            "algo": {"name": algo, **extra},
            "collector": {"frames_per_batch": 64, "total_frames": 640},
            "eval": {"final_episodes": 2},
            "timing": {"enabled": False},
        }
    )
    run = build_run(cfg)
    state = train(run)
    assert state.status == "completed" and run.source.action_mask == "info"
    assert sum(run.source.envs.unwrapped.get_attr("invalid_actions")) == 0
