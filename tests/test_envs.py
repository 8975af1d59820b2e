"""Envs from [env]: the single env evaluation plays (same kwargs and limit, rgb_array rendering);
vector envs: the autoreset mode of each vectorization, the episode-statistics
window against a plain loop, truncation and kwargs, space names, and the --env-package checks
(imports and the packages a run folder records)."""

import json
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from rlcli.config.errors import ConfigError, InputError
from rlcli.config.schema import EnvConfig
from rlcli.envs import (
    autoreset_mode,
    check_run_packages,
    describe_space,
    import_env_packages,
    make_env,
    make_envs,
)
from rlcli.files import write_atomic
from rlcli.trainer.provenance import provenance


def episodes_by_loop(envs, actions, mode: AutoresetMode) -> tuple[list[float], list[int]]:
    """(returns, lengths) of every episode that ends while ``actions`` are stepped, in the order
    they end (by env within a step), summed here step by step."""
    num_envs = envs.num_envs
    ret, length = np.zeros(num_envs), np.zeros(num_envs, dtype=int)
    resetting = np.zeros(num_envs, dtype=bool)
    returns, lengths = [], []
    for action in actions:
        _, reward, terminated, truncated, _ = envs.step(action)
        for i in range(num_envs):
            # NEXT_STEP: the step after an episode's end only resets that env; it is no transition.
            if mode is AutoresetMode.NEXT_STEP and resetting[i]:
                continue
            ret[i] += reward[i]
            length[i] += 1
            if terminated[i] or truncated[i]:
                returns.append(float(ret[i]))
                lengths.append(int(length[i]))
                ret[i], length[i] = 0.0, 0
        resetting = terminated | truncated
    return returns, lengths


@pytest.mark.parametrize(
    ("vectorization", "mode"), [("sync", AutoresetMode.SAME_STEP), ("vector_entry_point", AutoresetMode.NEXT_STEP)]
)
def test_each_vectorization_declares_its_autoreset_mode(vectorization, mode):
    envs = make_envs(EnvConfig(id="CartPole-v1", num_envs=3, vectorization=vectorization))
    try:
        assert autoreset_mode(envs) is mode
        assert envs.num_envs == 3
        obs, _ = envs.reset(seed=0)
        assert obs.shape == (3, 4)
    finally:
        envs.close()


def test_an_env_that_declares_no_autoreset_mode_is_next_step():
    class Bare(gym.vector.VectorEnv):
        metadata = {}

    assert autoreset_mode(Bare()) is AutoresetMode.NEXT_STEP


def test_same_step_envs_reset_in_the_step_that_ends_the_episode_and_keep_the_final_observation():
    envs = make_envs(EnvConfig(id="Pendulum-v1", num_envs=2, max_episode_steps=3))
    try:
        envs.reset(seed=0)
        for _ in range(2):
            _, _, _, truncated, _ = envs.step(np.zeros((2, 1), np.float32))
            assert not truncated.any()
        obs, _, terminated, truncated, info = envs.step(np.zeros((2, 1), np.float32))
    finally:
        envs.close()
    assert truncated.all() and not terminated.any()
    final = np.stack(info["final_obs"])
    # The observation returned is the new episode's; the one the episode ended on is apart.
    assert final.shape == (2, 3) and not np.allclose(final, obs)


@pytest.mark.parametrize(
    ("env_id", "vectorization"),
    [("CartPole-v1", "sync"), ("CartPole-v1", "vector_entry_point"), ("Pendulum-v1", "sync")],
)
def test_the_return_window_holds_the_last_episodes_of_a_plain_loop(env_id, vectorization):
    cfg = EnvConfig(id=env_id, num_envs=2, vectorization=vectorization, max_episode_steps=12)
    rng = np.random.default_rng(0)
    if env_id == "CartPole-v1":
        # Env 0 always pushes right and falls (terminated); env 1 alternates and lasts (truncated).
        actions = [np.array([1, t % 2]) for t in range(60)]
    else:
        actions = [rng.uniform(-2, 2, (2, 1)).astype(np.float32) for _ in range(60)]
    envs = make_envs(cfg, return_window=3)
    try:
        envs.reset(seed=0)
        returns, lengths = episodes_by_loop(envs, actions, autoreset_mode(envs))
        assert envs.return_queue.maxlen == envs.length_queue.maxlen == 3
        assert len(returns) > 3
        np.testing.assert_allclose(list(envs.return_queue), returns[-3:])
        assert [int(n) for n in envs.length_queue] == lengths[-3:]
    finally:
        envs.close()
    if env_id == "CartPole-v1":
        assert min(lengths) < 12 and max(lengths) == 12


def test_max_episode_steps_truncates_and_none_keeps_the_envs_own_limit():
    for limit, expected in ((7, 7), (None, 200)):
        envs = make_envs(EnvConfig(id="Pendulum-v1", num_envs=1, max_episode_steps=limit))
        try:
            envs.reset(seed=0)
            steps = 1
            while not envs.step(np.zeros((1, 1), np.float32))[3].any():
                steps += 1
                assert steps <= expected
        finally:
            envs.close()
        assert steps == expected


def test_kwargs_reach_the_env_constructor():
    envs = make_envs(EnvConfig(id="Pendulum-v1", num_envs=2, kwargs={"g": 2.5}))
    try:
        assert [env.unwrapped.g for env in envs.unwrapped.envs] == [2.5, 2.5]
    finally:
        envs.close()


def test_an_env_that_cannot_be_made_is_a_config_error_at_env():
    with pytest.raises(ConfigError) as info:
        make_envs(EnvConfig(id="Pendulum-v1", num_envs=1, kwargs={"gravity": 3}), source="pendulum.toml")
    (issue,) = info.value.issues
    assert issue.path == "env"
    assert issue.message.startswith("cannot make 'Pendulum-v1': TypeError: ")
    assert "gravity" in issue.message
    assert "pendulum.toml" in info.value.render()


def test_a_single_env_is_made_as_training_makes_it_with_its_limit_and_kwargs():
    env = make_env(EnvConfig(id="Pendulum-v1", num_envs=4, max_episode_steps=5, kwargs={"g": 2.5}))
    try:
        env.reset(seed=0)
        ends = [env.step(np.zeros(1, np.float32))[3] for _ in range(5)]
        assert env.unwrapped.g == 2.5 and ends == [False] * 4 + [True]
    finally:
        env.close()


def test_a_single_env_for_video_is_refused_when_it_has_no_rgb_array_frames():
    gym.register("RlcliNoFrames-v0", entry_point=NoFrames)
    try:
        with pytest.raises(InputError) as info:
            make_env(EnvConfig(id="RlcliNoFrames-v0", num_envs=1), render=True)
    finally:
        gym.registry.pop("RlcliNoFrames-v0")
    assert "RlcliNoFrames-v0 cannot render rgb_array frames; its render modes: ansi" in str(info.value)


class NoFrames(gym.Env):
    """An env that renders text only."""

    metadata = {"render_modes": ["ansi"]}
    observation_space = gym.spaces.Box(-1.0, 1.0, (1,))
    action_space = gym.spaces.Discrete(2)

    def __init__(self, render_mode=None):
        self.render_mode = render_mode


def test_a_single_env_that_cannot_be_made_is_the_same_config_error_as_a_vector_one():
    with pytest.raises(ConfigError) as info:
        make_env(EnvConfig(id="Pendulum-v1", num_envs=1, kwargs={"gravity": 3}), source="pendulum.toml")
    (issue,) = info.value.issues
    assert issue.path == "env" and issue.message.startswith("cannot make 'Pendulum-v1': TypeError: ")


@pytest.mark.parametrize(
    ("space", "name"),
    [
        (gym.spaces.Box(-1.0, 1.0, (4,)), "Box(4,)"),
        (gym.spaces.Box(0, 255, (84, 84, 3), np.uint8), "Box(84, 84, 3) uint8"),
        (gym.spaces.Discrete(2), "Discrete(2)"),
        (gym.spaces.MultiDiscrete([2, 3]), "MultiDiscrete([2 3])"),
    ],
    ids=["box", "image", "discrete", "other"],
)
def test_describe_space(space, name):
    assert describe_space(space) == name


def test_describe_space_of_the_real_envs():
    envs = make_envs(EnvConfig(id="CartPole-v1", num_envs=1, vectorization="vector_entry_point"))
    pendulum = make_envs(EnvConfig(id="Pendulum-v1", num_envs=1))
    try:
        assert describe_space(envs.single_observation_space) == "Box(4,)"
        assert describe_space(envs.single_action_space) == "Discrete(2)"
        assert describe_space(pendulum.single_action_space) == "Box(1,)"
    finally:
        envs.close()
        pendulum.close()


@pytest.mark.parametrize("name", ["", "os;rm", "a..b", "1st", "my-envs", "pkg."])
def test_env_package_that_is_not_a_module_name_is_refused_unimported(name):
    with pytest.raises(InputError) as info:
        import_env_packages([name])
    assert info.value.what == f"--env-package {name}"
    assert info.value.issues[0].message.startswith("not a module name")


def test_env_package_import_errors_give_their_type_and_first_line(tmp_path, monkeypatch):
    (tmp_path / "rlcli_envs_test_explodes.py").write_text(
        'raise RuntimeError("needs a licence key\\nsecond line never shown")\n', encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(InputError) as info:
            import_env_packages(["rlcli_envs_test_explodes"])
    finally:
        sys.modules.pop("rlcli_envs_test_explodes", None)
    assert info.value.render() == (
        "--env-package rlcli_envs_test_explodes: cannot import it: RuntimeError: needs a licence key"
    )
    with pytest.raises(InputError) as info:
        import_env_packages(["rlcli_envs_test_nowhere"])
    assert info.value.render() == (
        "--env-package rlcli_envs_test_nowhere: cannot import it: "
        "ModuleNotFoundError: No module named 'rlcli_envs_test_nowhere'"
    )


def test_env_packages_are_imported_in_order_and_their_registrations_take_effect(tmp_path, monkeypatch):
    package = tmp_path / "rlcli_envs_test_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "register.py").write_text(
        "import gymnasium as gym\n"
        "gym.register('RlcliEnvsTest/Pendulum-v0', entry_point='gymnasium.envs.classic_control:PendulumEnv',\n"
        "             max_episode_steps=5)\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(InputError, match="--env-package rlcli_envs_test_missing"):
            import_env_packages(["rlcli_envs_test_pkg.register", "rlcli_envs_test_missing"])
        # The first was imported before the second failed.
        assert "RlcliEnvsTest/Pendulum-v0" in gym.registry
        envs = make_envs(EnvConfig(id="RlcliEnvsTest/Pendulum-v0", num_envs=1))
        try:
            envs.reset(seed=0)
            truncated = [envs.step(np.zeros((1, 1), np.float32))[3][0] for _ in range(5)]
        finally:
            envs.close()
        assert truncated == [False] * 4 + [True]
    finally:
        gym.registry.pop("RlcliEnvsTest/Pendulum-v0", None)
        for name in ("rlcli_envs_test_pkg.register", "rlcli_envs_test_pkg"):
            sys.modules.pop(name, None)


def write_run_json(run_dir, env_packages):
    run_dir.mkdir(parents=True, exist_ok=True)
    row = {"status": "completed", "env": "RlcliTest/Corridor-v0", **provenance(0, env_packages=env_packages)}
    write_atomic(run_dir / "run.json", json.dumps(row, indent=2) + "\n")


def test_a_run_needs_every_env_package_it_was_trained_with(tmp_path):
    run_dir = tmp_path / "run"
    write_run_json(run_dir, ["rlcli_test_envs", "more_envs.register"])
    with pytest.raises(InputError) as info:
        check_run_packages(run_dir, ["rlcli_test_envs"])
    assert info.value.render() == (
        f"run folder {run_dir}: its env was registered by --env-package more_envs.register; give the same flags again"
    )
    with pytest.raises(InputError, match="--env-package rlcli_test_envs --env-package more_envs.register;"):
        check_run_packages(run_dir, [])
    check_run_packages(run_dir, ["more_envs.register", "other", "rlcli_test_envs"])


@pytest.mark.parametrize(
    "content",
    [None, "{not json", "[1, 2]", '{"status": "running"}', '{"env_packages": null}', '{"env_packages": []}'],
    ids=["no-run-json", "not-json", "not-an-object", "no-key", "null", "empty"],
)
def test_a_run_that_records_no_env_packages_needs_none(tmp_path, content):
    if content is not None:
        (tmp_path / "run.json").write_text(content, encoding="utf-8")
    check_run_packages(tmp_path, [])
