"""Checks every algorithm in the table gets for free."""

import math

import pytest
import torch

from rlcli.algos import ALGORITHMS
from rlcli.config.errors import ConfigError
from rlcli.config.load import validate_data
from rlcli.run import build_run
from rlcli.timing import Timer


def config(name: str, env_id: str, **algo):
    return validate_data({
        "run": {"seed": 1, "device": "cpu"},
        "env": {"id": env_id, "num_envs": 4, "vectorization": "sync"},
        "algo": {"name": name, **algo},
        "collector": {"frames_per_batch": 64, "total_frames": 640},
    })


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_one_update_returns_finite_named_terms_and_changes_weights(name, env_id):
    module = ALGORITHMS[name]
    extra = {"minibatch_size": 32} if "minibatch_size" in module.CONFIG.model_fields else {}
    run = build_run(config(name, env_id, **extra))
    try:
        before = [p.detach().clone() for p in run.algo.agent.parameters()]
        timer = Timer(run.device)
        batch = run.algo.advantages(run.collector.collect(timer))
        terms = run.algo.update(batch, timer)
    finally:
        run.close()
    assert {"loss/policy", "loss/value", "loss/entropy"} <= set(terms)
    assert all(math.isfinite(v) for v in terms.values())
    changed = [not torch.equal(a, b) for a, b in zip(before, run.algo.agent.parameters())]
    assert any(changed)
    assert {"update.forward", "update.backward", "update.optimizer"} <= set(timer.current)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_unsupported_observation_space_is_a_config_error(name):
    cfg = validate_data({
        "env": {"id": "Blackjack-v1", "num_envs": 2},
        "algo": {"name": name},
        "collector": {"frames_per_batch": 64, "total_frames": 640},
    } | ({"algo": {"name": name, "minibatch_size": 32}} if name == "ppo" else {}))
    with pytest.raises(ConfigError) as info:
        build_run(cfg)
    text = info.value.render()
    assert "Blackjack-v1" in text and "Tuple" in text and "supported" in text


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_module_has_the_table_interface(name):
    module = ALGORITHMS[name]
    assert module.CONFIG.model_fields["name"].annotation.__args__ == (name,)
    assert set(module.SUPPORTS) == {"observation", "action"}
    assert callable(module.build)
