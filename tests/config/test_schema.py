"""``config/schema.py``: the models' bounds, env-id checks and cross-section checks."""

from __future__ import annotations

import copy
import sys

import pydantic
import pytest

from rlcli.algos import ALGORITHMS
from rlcli.config.algos import ALGO_CONFIGS
from rlcli.config.errors import ConfigError
from rlcli.config.load import load_config, validate_data
from rlcli.config.schema import SECTIONS, RunConfig
from support.presets import MINIMAL_TOML

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

BASE = tomllib.loads(MINIMAL_TOML)


def with_changes(**sections: dict) -> dict:
    data = copy.deepcopy(BASE)
    for section, values in sections.items():
        data.setdefault(section, {}).update(values)
    return data


def issues_of(data: dict) -> dict[str, str]:
    with pytest.raises(ConfigError) as exc:
        validate_data(data, "x.toml")
    return {issue.path: issue.message for issue in exc.value.issues}


def test_minimal_config_fills_defaults():
    cfg = RunConfig.model_validate(BASE)
    assert cfg.run.name == "run" and cfg.env.vectorization == "sync"
    assert cfg.network.policy_sizes == cfg.network.value_sizes == [64, 64]
    assert SECTIONS == (
        "run",
        "env",
        "network",
        "algo",
        "collector",
        "data",
        "optim",
        "logger",
        "timing",
        "checkpoint",
        "eval",
    )


def test_configs_are_frozen():
    cfg = RunConfig.model_validate(BASE)
    with pytest.raises(pydantic.ValidationError):
        cfg.algo.gamma = 0.5  # type: ignore[misc]


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_algo_name_picks_the_model(name):
    data = copy.deepcopy(BASE)
    data["algo"] = {"name": name}
    if "collector" not in ALGORITHMS[name].capabilities.sources:
        # An offline algorithm: a [data] section in place of [collector] (the dataset is read at build).
        del data["collector"]
        data["data"] = {"dataset": "pendulum/medium-v0"}
    if ALGORITHMS[name].capabilities.teams:
        # A team algorithm trains on a team env.
        pytest.importorskip("vmas")
        data["env"] = {"id": "vmas/balance"}
    cfg = RunConfig.model_validate(data)
    assert isinstance(cfg.algo, ALGORITHMS[name].config)


@pytest.mark.parametrize(
    ("sections", "path", "fragment"),
    [
        ({"env": {"id": "CartPole-v2"}}, "env.id", "did you mean 'CartPole-v1'"),
        ({"env": {"id": "gymnasium.envs.classic_control:CartPoleEnv"}}, "env.id", "is not allowed"),
        ({"env": {"id": "os:system"}}, "env.id", "a config cannot import code"),
        (
            {"env": {"id": "Pendulum-v1", "vectorization": "vector_entry_point"}},
            "env.vectorization",
            "no vector entry point",
        ),
        (
            {"env": {"vectorization": "threads"}},
            "env.vectorization",
            'allowed: "sync", "async" or "vector_entry_point"',
        ),
        ({"network": {"hidden_sizes": [64, 0]}}, "network.hidden_sizes", "between 1 and 65536"),
        (
            {"network": {"activation": "sigmoid"}},
            "network.activation",
            '"sigmoid" is not allowed; allowed: "tanh", "relu"',
        ),
        ({"run": {"device": "gpu"}}, "run.device", "'gpu' is not a device; allowed: auto, cpu, cuda, cuda:N"),
        ({"run": {"name": "a/b"}}, "run.name", "'a/b' has the characters '/'; allowed: letters, digits, _ . -"),
        ({"optim": {"lr": 0}}, "optim.lr", "0 is out of range; allowed: > 0 and <= 1"),
        (
            {"logger": {"backends": ["neptune"]}},
            "logger.backends[0]",
            'allowed: "csv", "jsonl", "tensorboard", "wandb" or "mlflow"',
        ),
        ({"algo": {"epochs": 0}}, "algo.epochs", "0 is out of range; allowed: 1 to 1000"),
        ({"algo": {"gamma": -0.1}}, "algo.gamma", "-0.1 is out of range; allowed: 0 to 1"),
    ],
)
def test_bad_values(sections, path, fragment):
    issues = issues_of(with_changes(**sections))
    assert fragment in issues[path], issues


@pytest.mark.parametrize(
    ("sections", "path", "message"),
    [
        (
            {"collector": {"frames_per_batch": 66}},
            "collector.frames_per_batch",
            "frames_per_batch (66) must be a multiple of env.num_envs (4)",
        ),
        (
            {"collector": {"total_frames": 32}},
            "collector.total_frames",
            "total_frames (32) must be at least frames_per_batch (64)",
        ),
        (
            {"algo": {"minibatch_size": 128}},
            "algo.minibatch_size",
            "minibatch_size (128) must not exceed collector.frames_per_batch (64)",
        ),
    ],
)
def test_cross_section_checks(sections, path, message):
    assert issues_of(with_changes(**sections)) == {path: message}


def test_a2c_has_no_minibatch_to_check():
    data = copy.deepcopy(BASE)
    data["algo"] = {"name": "a2c"}
    data["collector"] = {"frames_per_batch": 8, "total_frames": 80}
    assert RunConfig.model_validate(data).collector.frames_per_batch == 8


@pytest.mark.parametrize("override", ["algo.entropy_coef=inf", "run.stop_at_return=nan", "optim.max_grad_norm=inf"])
def test_typed_floats_reject_inf_and_nan(override):
    with pytest.raises(ConfigError) as info:
        load_config("ppo_cartpole", [override])
    assert "finite number" in info.value.render()


def test_dates_in_env_kwargs_are_rejected():
    with pytest.raises(ConfigError) as info:
        load_config("ppo_cartpole", ["env.kwargs={start = 1979-05-27}"])
    assert "env.kwargs" in info.value.render() and "dates" in info.value.render()


@pytest.mark.parametrize("section", ["checkpoint", "eval"])
def test_each_kind_of_run_schedules_in_its_own_unit_and_refuses_the_other(section):
    online = with_changes(**{section: {"every_steps": 100}})
    assert issues_of(online) == {
        f"{section}.every_steps": f"an online run ([collector]) counts env frames: set {section}.every_frames "
        f"instead of {section}.every_steps"
    }
    offline = with_changes(**{section: {"every_frames": 100}})
    del offline["collector"]
    offline["algo"] = {"name": "iql"}
    offline["data"] = {"dataset": "somewhere", "total_steps": 1000, "steps_per_iteration": 100}
    assert issues_of(offline) == {
        f"{section}.every_frames": f"an offline run ([data]) counts gradient steps: set {section}.every_steps "
        f"instead of {section}.every_frames"
    }
    offline[section] = {"every_steps": 300}
    cfg = validate_data(offline, "x.toml")
    assert getattr(cfg, section).interval(offline=True) == 300
    assert getattr(cfg, section).interval(offline=False) == getattr(cfg, section).every_frames


def test_a_renamed_key_names_its_new_name():
    issues = issues_of(with_changes(algo={"gae_lambda": 0.9}))
    assert issues == {
        "algo.gae_lambda": "'gae_lambda' is now return_lambda (the lambda of value_target gae and td_lambda alike)"
    }
    assert load_config("ppo_cartpole", ["algo.return_lambda=0.9"]).algo.return_lambda == 0.9


@pytest.mark.parametrize("name", sorted(ALGO_CONFIGS))
def test_every_algorithm_section_says_its_warm_up_and_update_batch(name):
    algo = ALGO_CONFIGS[name](name=name)
    fields = type(algo).model_fields
    assert algo.warm_up == (algo.learning_starts if "learning_starts" in fields else 0)
    expected = next((getattr(algo, f) for f in ("minibatch_size", "batch_size") if f in fields), None)
    assert algo.update_batch == expected


def test_a_schedule_in_the_wrong_unit_is_reported_beside_the_other_cross_section_problems():
    issues = issues_of(with_changes(eval={"every_steps": 100}, collector={"frames_per_batch": 66}))
    assert set(issues) == {"eval.every_steps", "collector.frames_per_batch"}
