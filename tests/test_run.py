"""``build_run``: what it wires, the run folder it makes lazily, the space check and the summary of
``validate --build``."""

from datetime import datetime

import gymnasium as gym
import pytest
import torch

from rlcli.algos import ALGORITHMS, check_spaces
from rlcli.config.errors import ConfigError, InputError
from rlcli.config.load import validate_data
from rlcli.run import build_run, check_build
from rlcli.trainer.run_folder import RunFolder


def cfg(**sections):
    base = {
        "run": {"seed": 3, "device": "cpu"},
        "env": {"id": "CartPole-v1", "num_envs": 4, "vectorization": "vector_entry_point"},
        "algo": {"name": "ppo", "minibatch_size": 32},
        "collector": {"frames_per_batch": 64, "total_frames": 640},
    }
    return validate_data(base | sections)


def test_the_run_holds_the_algorithms_phases_after_update_and_its_metrics():
    run = build_run(cfg())
    try:
        spec = ALGORITHMS["ppo"]
        assert run.phases[:4] == ("collect", "collect.policy", "collect.env_step", "update")
        assert run.phases[4 : 4 + len(spec.phases)] == spec.phases
        assert run.phases[-2:] == ("log", "iteration") and "eval" not in run.phases
        assert run.metrics == spec.metrics and run.evaluator is None
        assert run.iterations == 10 and run.planned_progress == 640
        assert run.source.algo is run.algo and run.source.steps == 16
    finally:
        run.close()


def test_evaluation_adds_its_phase_and_an_evaluator_on_envs_of_its_own():
    run = build_run(cfg(eval={"every_frames": 128, "episodes": 2}))
    try:
        assert "eval" in run.phases and run.phases.index("eval") < run.phases.index("log")
        assert run.evaluator is not None and run.evaluator.agent is run.algo.agent
        assert run.evaluator.envs.unwrapped is not run.source.envs.unwrapped and run.evaluator.num_envs == 2
    finally:
        run.close()


def test_building_uses_and_changes_no_global_rng_and_repeats_from_the_seed():
    state = torch.get_rng_state()
    first, second = build_run(cfg()), build_run(cfg())
    try:
        assert torch.equal(torch.get_rng_state(), state)
        for key, value in first.algo.agent.state_dict().items():
            assert torch.equal(value, second.algo.agent.state_dict()[key]), key
    finally:
        first.close()
        second.close()


def test_the_run_folder_is_made_when_first_read_and_suffixed_when_taken(tmp_path, monkeypatch):
    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2026, 1, 2, 3, 4, 5)

    monkeypatch.setattr("rlcli.trainer.run_folder.datetime", Frozen)
    first, second = RunFolder(tmp_path / "runs", "exp"), RunFolder(tmp_path / "runs", "exp")
    assert not first.created and not (tmp_path / "runs").exists()
    assert first.path == tmp_path / "runs" / "exp-20260102-030405" and first.path.is_dir() and first.created
    assert second.path == tmp_path / "runs" / "exp-20260102-030405-2"


def test_a_run_folder_that_cannot_be_made_is_an_input_error_naming_the_folder_and_the_fix(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        _ = RunFolder(blocker / "below", "exp").path
    text = str(caught.value)
    assert str(blocker / "below") in text and "--out DIR" in text and "run.output_dir" in text


def test_building_alone_creates_nothing_on_disk(tmp_path):
    run = build_run(cfg(run={"seed": 3, "device": "cpu", "output_dir": str(tmp_path / "out")}))
    run.close()
    assert not (tmp_path / "out").exists()


def test_check_spaces_names_the_env_the_space_and_what_is_supported():
    env = gym.make("Pendulum-v1")
    try:
        with pytest.raises(ConfigError) as caught:
            check_spaces("dqn", "Pendulum-v1", env.observation_space, env.action_space, "my.toml")
    finally:
        env.close()
    issue = caught.value.issues[0]
    assert caught.value.file == "my.toml" and issue.path == "algo.name"
    assert "Pendulum-v1 has action space Box" in issue.message and "supported action spaces: Discrete" in issue.message


def test_check_build_summarises_spaces_parameters_and_device():
    summary = check_build(cfg())
    run = build_run(cfg())
    try:
        params = sum(p.numel() for p in run.algo.agent.parameters())
    finally:
        run.close()
    assert summary == (
        f"ppo on CartPole-v1: observation Box(4,), action Discrete(2), {params:,} parameters, cpu; "
        "encoders: encoder flat -> 4; observation normalization off; no action masks (auto); "
        f"{run.threads.describe()}; precision fp32"
    )
    assert run.threads.describe().startswith("threads auto: acting 1 (")
