"""The Evaluator on real gymnasium envs with freshly built algorithms, EvalResult's figures, and
how evaluate_run finds a run's weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlcli.config.errors import InputError
from rlcli.config.load import validate_data
from rlcli.play.evaluation import EvalResult, Evaluator
from rlcli.run import build_run
from support.paths import ROOT

ENV_PACKAGES = ROOT / "tests" / "envpkg"


def built(env: dict, algo: dict, seed: int = 1):
    """A built run (networks initialised from ``seed``, nothing trained)."""
    cfg = validate_data(
        {
            "run": {"seed": seed, "device": "cpu"},
            "env": {"num_envs": 4, "vectorization": "sync"} | env,
            "algo": algo,
            "collector": {"frames_per_batch": 64, "total_frames": 640},
        }
    )
    return build_run(cfg)


@pytest.fixture
def cartpole():
    run = built({"id": "CartPole-v1"}, {"name": "ppo", "minibatch_size": 32})
    yield run
    run.close()


class Recorder:
    """An agent stand-in that passes ``actions`` calls on and remembers their arguments."""

    def __init__(self, agent):
        self.agent = agent
        self.calls: list[tuple[int, bool, torch.Generator]] = []

    memory = None

    def actions(self, observation, *, deterministic, generator, carry=None):
        self.calls.append((observation.shape[0], deterministic, generator))
        return self.agent.actions(observation, deterministic=deterministic, generator=generator, carry=carry)


@pytest.mark.parametrize("episodes", [1, 3, 4, 7])
def test_plays_exactly_the_episodes_asked_and_counts_cartpoles_steps(cartpole, episodes):
    evaluator = Evaluator(
        cartpole.algo.agent, cartpole.cfg.env, episodes=episodes, deterministic=True, seed=5, device="cpu"
    )
    try:
        result = evaluator()
    finally:
        evaluator.close()
    assert result.episodes == episodes == len(result.lengths)
    # CartPole pays 1 per step: each return is its episode's length.
    assert result.returns == [float(n) for n in result.lengths]
    assert all(1 <= n <= 500 for n in result.lengths)


def test_max_episode_steps_of_the_config_truncates_evaluation_episodes_too():
    run = built({"id": "CartPole-v1", "max_episode_steps": 6}, {"name": "ppo", "minibatch_size": 32})
    evaluator = Evaluator(run.algo.agent, run.cfg.env, episodes=6, deterministic=False, seed=0, device="cpu")
    try:
        result = evaluator()
    finally:
        evaluator.close()
        run.close()
    assert max(result.lengths) <= 6 and result.episodes == 6


def test_a_round_is_reproducible_and_leaves_every_training_rng_alone(cartpole):
    algo = cartpole.algo
    algo_generator = algo.generator.get_state()
    collector_generator = cartpole.source.generator.get_state()
    agent = {k: v.clone() for k, v in algo.agent.state_dict().items()}
    global_rng = torch.get_rng_state()
    numpy_rng = np.random.get_state()[1].copy()
    evaluator = Evaluator(algo.agent, cartpole.cfg.env, episodes=6, deterministic=False, seed=11, device="cpu")
    try:
        first, again, other = evaluator(0), evaluator(0), evaluator(1)
    finally:
        evaluator.close()
    assert first == again
    assert first.returns != other.returns
    assert torch.equal(torch.get_rng_state(), global_rng)
    assert np.array_equal(np.random.get_state()[1], numpy_rng)
    assert torch.equal(algo.generator.get_state(), algo_generator)
    assert torch.equal(cartpole.source.generator.get_state(), collector_generator)
    for key, value in algo.agent.state_dict().items():
        assert torch.equal(value, agent[key]), key


def test_the_same_seed_makes_the_same_round_in_a_new_evaluator(cartpole):
    rounds = []
    for _ in range(2):
        evaluator = Evaluator(
            cartpole.algo.agent, cartpole.cfg.env, episodes=3, deterministic=False, seed=4, device="cpu"
        )
        try:
            rounds.append(evaluator(2))
        finally:
            evaluator.close()
    assert rounds[0] == rounds[1]


def test_deterministic_and_stochastic_reach_the_policy_with_the_evaluators_own_generator(cartpole):
    results = {}
    for deterministic in (True, False):
        recorder = Recorder(cartpole.algo.agent)
        evaluator = Evaluator(recorder, cartpole.cfg.env, episodes=5, deterministic=deterministic, seed=3, device="cpu")
        try:
            results[deterministic] = evaluator()
        finally:
            evaluator.close()
        assert {flag for _, flag, _ in recorder.calls} == {deterministic}
        assert {id(generator) for _, _, generator in recorder.calls} == {id(evaluator.generator)}
        assert evaluator.generator is not cartpole.source.generator
        # Finished envs leave the batch: the last calls carry fewer rows than the first.
        assert recorder.calls[0][0] == 4 and recorder.calls[-1][0] >= 1
    # The same env seeds: only the choice of actions differs.
    assert results[True].returns != results[False].returns


def test_sac_on_pendulum_returns_raw_negative_rewards_over_full_episodes():
    run = built(
        {"id": "Pendulum-v1"}, {"name": "sac", "batch_size": 16, "learning_starts": 64, "replay": {"capacity": 1000}}
    )
    try:
        rounds = {}
        for deterministic in (True, False):
            evaluator = Evaluator(
                run.algo.agent, run.cfg.env, episodes=2, deterministic=deterministic, seed=9, device="cpu"
            )
            try:
                rounds[deterministic] = (evaluator(), evaluator())
            finally:
                evaluator.close()
    finally:
        run.close()
    for first, again in rounds.values():
        assert first == again
        assert first.lengths == [200, 200]
        assert all(r < 0 for r in first.returns)
    assert rounds[True][0].returns != rounds[False][0].returns


@pytest.fixture
def test_envs(monkeypatch):
    # Imported once per session: a second import would register the envs again.
    monkeypatch.syspath_prepend(str(ENV_PACKAGES))
    import rlcli_test_envs  # noqa: F401 - registers the corridors


def test_recording_sends_every_frame_of_the_first_episode_only(test_envs):
    run = built({"id": "RlcliTest/PaintedCorridor-v0"}, {"name": "ppo", "minibatch_size": 32})
    frames: list[np.ndarray] = []
    evaluator = Evaluator(
        run.algo.agent, run.cfg.env, episodes=3, deterministic=True, seed=0, device="cpu", render=True
    )
    try:
        assert evaluator.num_envs == 1
        result = evaluator(frames_sink=frames.append)
    finally:
        evaluator.close()
        run.close()
    assert result.episodes == 3
    # The frame after the reset, then one per step of the first episode.
    assert len(frames) == result.lengths[0] + 1
    assert all(frame.shape == (32, 192, 3) and frame.dtype == np.uint8 for frame in frames)


def test_rendering_an_env_without_rgb_array_is_an_input_error_naming_its_modes(test_envs):
    run = built({"id": "RlcliTest/Corridor-v0"}, {"name": "ppo", "minibatch_size": 32})
    try:
        with pytest.raises(InputError) as info:
            Evaluator(run.algo.agent, run.cfg.env, episodes=1, deterministic=True, seed=0, device="cpu", render=True)
    finally:
        run.close()
    assert "RlcliTest/Corridor-v0 cannot render rgb_array frames; its render modes: none" in info.value.render()


def test_eval_result_figures_use_the_population_std():
    result = EvalResult([1.0, 3.0, 5.0, 7.0], [10, 20, 30, 40])
    assert (result.episodes, result.mean, result.min, result.max, result.length_mean) == (4, 4.0, 1.0, 7.0, 25.0)
    assert result.std == pytest.approx(np.std([1.0, 3.0, 5.0, 7.0]))
    assert result.row() == {"eval/return_mean": 4.0, "eval/return_std": result.std, "eval/length_mean": 25.0}
    data = result.to_json()
    assert data["returns"] == [1.0, 3.0, 5.0, 7.0] and data["lengths"] == [10, 20, 30, 40]
    assert data["return_std"] == result.std


@pytest.mark.parametrize("vectorization", ["sync", "vector_entry_point"])
@pytest.mark.parametrize("num_envs", [1, 3, 8])
def test_a_vector_of_envs_plays_each_its_quota_and_counts_no_reset_step(vectorization, num_envs):
    # CartPole pays 1 a step: a return equals its episode's length unless a reset step (NEXT_STEP
    # autoreset, both kinds here) or a step past the quota were counted.
    run = built({"id": "CartPole-v1", "vectorization": vectorization}, {"name": "ppo", "minibatch_size": 32})
    evaluator = Evaluator(
        run.algo.agent, run.cfg.env, episodes=7, deterministic=False, seed=3, device="cpu", num_envs=num_envs
    )
    try:
        assert evaluator.num_envs == min(7, num_envs)
        result = evaluator()
        again = evaluator()
    finally:
        evaluator.close()
        run.close()
    assert result.episodes == 7 and result.returns == [float(n) for n in result.lengths]
    assert all(1 <= n <= 500 for n in result.lengths) and len(set(result.lengths)) > 1
    # The same seed offset plays the same episodes.
    assert again.returns == result.returns


def test_eval_num_envs_auto_takes_the_runs_envs_or_at_least_sixteen():
    from rlcli.config.schedules import AUTO_EVAL_ENVS, EvalConfig

    assert EvalConfig().envs(1) == AUTO_EVAL_ENVS == 16
    assert EvalConfig().envs(64) == 64
    assert EvalConfig(num_envs=3).envs(64) == 3
