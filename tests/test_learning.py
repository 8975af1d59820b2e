"""Learning thresholds of the shipped presets (slow: run with ``python -m pytest -m slow``): one bar per
algorithm on its cheapest task, the rolling training return (for QR-DQN and TRPO, whose presets are
RL-Zoo's cells, the Zoo's own measure: the final deterministic evaluation after the preset's budget).
The variants and the other tasks (redq_pendulum, ppo_pendulum, ppo_frozenlake, the Zoo-table presets)
are measured by ``benchmarks/time_to_solve.py`` and ``benchmarks/zoo_table.py``, whose figures
docs/results.md shows."""

import pytest
import torch

from rlcli.config.load import load_config, validate_data
from rlcli.models.precision import bf16_problem
from rlcli.run import build_run
from rlcli.trainer.loop import train

pytestmark = pytest.mark.slow


def solved_seeds(preset: str, threshold: float, max_frames: int, seeds: int, tmp_path, *settings: str) -> list[int]:
    reached = []
    for seed in range(seeds):
        cfg = load_config(
            preset,
            [
                *settings,
                f"run.seed={seed}",
                f"run.stop_at_return={threshold}",
                f"collector.total_frames={max_frames}",
                f'run.output_dir="{tmp_path.as_posix()}"',
                "timing.enabled=false",
                "eval.final_episodes=0",
            ],
        )
        state = train(build_run(cfg))
        if state.status == "solved":
            assert state.solved_at[0] <= max_frames
            reached.append(seed)
    return reached


def final_evaluations(preset: str, seeds: int, tmp_path, *settings: str) -> list[float]:
    """The mean return of each seed's deterministic final evaluation (100 episodes) after the preset's whole
    budget: the measure of RL-Zoo's table."""
    scores = []
    for seed in range(seeds):
        cfg = load_config(
            preset,
            [
                *settings,
                f"run.seed={seed}",
                "run.stop_at_return=1e9",
                f'run.output_dir="{tmp_path.as_posix()}"',
                "timing.enabled=false",
                "checkpoint.every_frames=0",
            ],
        )
        state = train(build_run(cfg))
        scores.append(state.final_eval["mean"])
    return scores


def test_ppo_cartpole_reaches_475_on_3_of_3_seeds_within_200k_frames(tmp_path):
    # The preset's linear schedules are tuned for its own 200k-frame budget.
    assert len(solved_seeds("ppo_cartpole", 475, 200_000, 3, tmp_path)) == 3


@pytest.mark.skipif(bf16_problem(torch.device("cpu")) is not None, reason="this CPU has no bfloat16 arithmetic")
def test_ppo_cartpole_in_bf16_reaches_475_on_3_of_3_seeds_within_200k_frames(tmp_path):
    # run.precision = "bf16": the networks under bfloat16 autocast, everything else float32 (issue 34).
    assert len(solved_seeds("ppo_cartpole", 475, 200_000, 3, tmp_path, 'run.precision="bf16"')) == 3


def test_a2c_cartpole_reaches_475_on_2_of_3_seeds_within_500k_frames(tmp_path):
    assert len(solved_seeds("a2c_cartpole", 475, 500_000, 3, tmp_path)) >= 2


def test_reinforce_cartpole_reaches_475_on_3_of_3_seeds_within_200k_frames(tmp_path):
    # Seeds 0-2 reach it in 80-122k frames, under 10 s each on 2 cores.
    assert len(solved_seeds("reinforce_cartpole", 475, 200_000, 3, tmp_path)) == 3


def test_dqn_cartpole_reaches_475_on_3_of_3_seeds_within_100k_frames(tmp_path):
    # The rolling mean of 100 training episodes, exploration included (about 3 minutes on 2 cores).
    assert len(solved_seeds("dqn_cartpole", 475, 100_000, 3, tmp_path)) == 3


# Pendulum presets: the mean of the last 10 training episodes (run.return_window = 10).
def test_sac_pendulum_reaches_minus_200_on_3_of_3_seeds_within_10k_frames(tmp_path):
    assert len(solved_seeds("sac_pendulum", -200, 10_000, 3, tmp_path)) == 3


def test_td3_pendulum_reaches_minus_200_on_3_of_3_seeds_within_10k_frames(tmp_path):
    assert len(solved_seeds("td3_pendulum", -200, 10_000, 3, tmp_path)) == 3


def test_ddpg_pendulum_reaches_minus_200_on_2_of_3_seeds_within_20k_frames(tmp_path):
    assert len(solved_seeds("ddpg_pendulum", -200, 20_000, 3, tmp_path)) >= 2


def test_ppo_lstm_cartpolenovel_balances_for_500_steps_in_its_deterministic_final_evaluation(tmp_path):
    # CartPole with its velocities hidden: only a memory can infer them. One seed at the preset's 100k budget.
    cfg = load_config(
        "ppo_lstm_cartpolenovel",
        ["run.seed=0", f'run.output_dir="{tmp_path.as_posix()}"', "timing.enabled=false", "eval.final_episodes=20"],
    )
    state = train(build_run(cfg))
    assert state.final_eval is not None and state.final_eval["mean"] == 500.0, state.final_eval


def test_masked_ppo_taxi_reaches_8_on_seed_0_within_500k_frames_taking_no_invalid_action(tmp_path):
    # gymnasium's threshold for Taxi; seed 0 reaches it at about 160k frames, 12 s on 2 cores. The
    # counting Taxi (tests/envpkg) is Taxi-v4 itself, counting the actions its mask forbade.
    from support.paths import env_packages_importable

    env_packages_importable()
    import rlcli_test_envs  # noqa: F401

    cfg = load_config(
        "ppo_taxi_masked",
        [
            'env.id="RlcliTest/CountedTaxi-v0"',
            f'run.output_dir="{tmp_path.as_posix()}"',
            "timing.enabled=false",
            "eval.final_episodes=0",
        ],
    )
    run = build_run(cfg)
    state = train(run)
    assert state.status == "solved" and state.solved_at[0] <= 500_000
    assert sum(run.source.envs.unwrapped.get_attr("invalid_actions")) == 0


def test_masks_and_memory_together_solve_the_masked_recall_task(tmp_path):
    # Recall a cue after 4 blank steps, answering among two allowed actions (tests/envpkg): a GRU policy
    # under masks scores 1 an episode; a memoryless one 0.5. Seed 0 solves it in about 12k frames, 4 s.
    from support.paths import env_packages_importable

    env_packages_importable()
    import rlcli_test_envs  # noqa: F401

    def recall(memory: str):
        data = {
            "run": {"seed": 0, "output_dir": str(tmp_path / memory), "stop_at_return": 0.99},
            "env": {"id": "RlcliTest/MaskedRecall-v0", "num_envs": 16, "action_mask": "info"},
            "network": {"hidden_sizes": [32], "memory": memory, "memory_size": 32},
            "algo": {"name": "ppo", "epochs": 4, "minibatch_size": 192, "entropy_coef": 0.01},
            "collector": {"frames_per_batch": 384, "total_frames": 60_000},
            "optim": {"lr": 0.003},
            "timing": {"enabled": False},
            "eval": {"final_episodes": 100},
        }
        run = build_run(validate_data(data))
        state = train(run)
        return state, sum(run.source.envs.unwrapped.get_attr("invalid_actions"))

    remembering, invalid = recall("gru")
    assert remembering.status == "solved" and remembering.final_eval["mean"] == 1.0
    assert invalid == 0
    forgetting, _ = recall("none")
    assert forgetting.status != "solved" and forgetting.final_eval["mean"] < 0.8


# The algorithms of sb3-contrib's part of RL-Zoo's table (issue 35).
def test_qrdqn_cartpole_scores_475_in_its_final_evaluation_on_3_of_3_seeds_at_50k_frames(tmp_path):
    # RL-Zoo's measure and budget (its table: 500.0); about 15 s a seed on 2 cores.
    scores = final_evaluations("qrdqn_cartpole", 3, tmp_path)
    assert all(score >= 475 for score in scores), scores


def test_trpo_cartpole_scores_475_in_its_final_evaluation_on_3_of_3_seeds_at_100k_frames(tmp_path):
    scores = final_evaluations("trpo_cartpole", 3, tmp_path)
    assert all(score >= 475 for score in scores), scores


def test_tqc_pendulum_reaches_minus_200_on_3_of_3_seeds_within_10k_frames(tmp_path):
    assert len(solved_seeds("tqc_pendulum", -200, 10_000, 3, tmp_path)) == 3


def test_crossq_pendulum_reaches_minus_200_on_3_of_3_seeds_within_10k_frames(tmp_path):
    assert len(solved_seeds("crossq_pendulum", -200, 10_000, 3, tmp_path)) == 3
