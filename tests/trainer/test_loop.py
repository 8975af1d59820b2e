"""The training loop in process: stop condition, rows written, run-folder errors, RNG isolation.

Two tests start processes and run in the integration layer: async envs (forked workers) and
torch.compile (inductor runs the C++ compiler)."""

import csv

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlcli import keys
from rlcli.config.errors import ConfigError
from rlcli.run import build_run
from rlcli.timing import Timer
from rlcli.trainer.loop import train
from support.configs import small_config


class OneStep(gym.Env):
    """Every episode is one step with reward 1."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, True, False, {}


if "rlcli-test/OneStep-v0" not in gym.registry:
    gym.register("rlcli-test/OneStep-v0", entry_point=OneStep)


def test_stop_at_return_waits_for_a_full_window_of_100_episodes(tmp_path):
    # 4 one-step episodes per env step, 8 per iteration: 100 episodes end in iteration 13.
    cfg = small_config(
        tmp_path,
        env={"id": "rlcli-test/OneStep-v0", "vectorization": "sync", "num_envs": 4},
        collector={"frames_per_batch": 8, "total_frames": 800},
        run={"stop_at_return": 0.5},
        algo={"minibatch_size": 8},
    )
    state = train(build_run(cfg))
    assert state.status == "solved"
    assert state.iteration == 13 and state.solved_at[0] == 104


def test_last_row_is_written_whatever_the_interval(tmp_path):
    state = train(build_run(small_config(tmp_path, logger={"interval": 3})))
    with (state.run_dir / "metrics.csv").open() as file:
        iterations = [int(row["iteration"]) for row in csv.DictReader(file)]
    assert state.iteration == 5
    assert iterations == [3, 5]


def test_an_unwritable_output_dir_is_a_config_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    run = build_run(small_config(tmp_path, run={"output_dir": str(blocker)}))
    with pytest.raises(ConfigError) as info:
        train(run)
    assert "run.output_dir" in info.value.render()


def test_runs_draw_from_their_own_generators(tmp_path):
    def actions(interleave: bool) -> torch.Tensor:
        first = build_run(small_config(tmp_path))
        other = build_run(small_config(tmp_path, run={"seed": 9})) if interleave else None
        timer = Timer(first.device)
        try:
            if other is not None:
                other.source.next_batch(timer)
                torch.rand(100)
            return first.source.next_batch(timer)[keys.ACTION].clone()
        finally:
            first.close()
            if other is not None:
                other.close()

    assert torch.equal(actions(False), actions(True))


@pytest.mark.parametrize(
    "algo",
    [{"name": "ppo", "minibatch_size": 32, "epochs": 1}, {"name": "dqn", "learning_starts": 0, "batch_size": 16}],
    ids=["ppo", "dqn"],
)
def test_observation_statistics_take_in_valid_steps_when_learning(tmp_path, algo):
    cfg = small_config(tmp_path, env={"max_episode_steps": 5, "normalize_observation": True}, algo=algo)
    run = build_run(cfg)
    try:
        timer = Timer(run.device)
        batch = run.source.next_batch(timer)
        # Acting never moves the statistics: a rollout is normalized with one frozen set.
        assert float(run.algo.agent.obs_norm.stats.count) < 1e-3
        run.algo.learn(batch, timer)
        count = float(run.algo.agent.obs_norm.stats.count)
    finally:
        run.close()
    # One observation per valid step; the reset steps show a final observation again.
    assert count == pytest.approx(float(batch[keys.VALID].sum()), abs=1e-3)
    assert not batch[keys.VALID].all()


def test_return_window_sets_the_stop_condition_and_the_rolling_return(tmp_path):
    # 4 one-step episodes per env step, 8 per iteration: a window of 10 fills in iteration 2.
    cfg = small_config(
        tmp_path,
        env={"id": "rlcli-test/OneStep-v0", "vectorization": "sync", "num_envs": 4},
        collector={"frames_per_batch": 8, "total_frames": 800},
        run={"stop_at_return": 0.5, "return_window": 10},
        algo={"minibatch_size": 8},
    )
    run = build_run(cfg)
    assert run.source.episode_stats.return_queue.maxlen == 10
    state = train(run)
    assert state.status == "solved"
    assert state.iteration == 2 and state.solved_at[0] == 16


def rows(state) -> list[dict[str, str]]:
    with (state.run_dir / "metrics.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize(
    "algo",
    [{"name": "ppo", "minibatch_size": 32, "epochs": 1}, {"name": "dqn", "learning_starts": 64, "batch_size": 16}],
    ids=["ppo", "dqn"],
)
def test_in_training_evaluation_fills_eval_columns_and_leaves_training_alone(tmp_path, algo):
    plain = train(build_run(small_config(tmp_path / "plain", algo=algo)))
    evaluated = train(build_run(small_config(tmp_path / "eval", algo=algo, eval={"every_frames": 128, "episodes": 3})))
    with_eval, without = rows(evaluated), rows(plain)
    # Due after the first iteration at or past each 128 frames, and at the last one.
    assert [r["frames"] for r in with_eval if r["eval/return_mean"]] == ["128", "256", "320"]
    for row in with_eval:
        if row["eval/return_mean"]:
            # CartPole pays 1 per step, so a return is its episode's length.
            assert float(row["eval/return_mean"]) == float(row["eval/length_mean"]) >= 8
            assert float(row["eval/return_std"]) >= 0
    # Evaluation draws from its own envs and generator: training's rows are the same without it.
    assert "eval/return_mean" not in without[0]
    for a, b in zip(with_eval, without):
        assert {
            k: v for k, v in a.items() if k in b and not k.startswith("time/") and k not in ("wall_time_s", "fps")
        } == {k: v for k, v in b.items() if not k.startswith("time/") and k not in ("wall_time_s", "fps")}


def stop_after(iterations: int):
    """A hook that asks for a stop, as a first Ctrl-C does, once ``iterations`` are done."""

    def hook(state):
        if state.iteration == iterations:
            state.stop_requested = True

    return hook


def comparable(state) -> list[dict[str, str]]:
    return [
        {k: v for k, v in row.items() if not k.startswith("time/") and k not in ("wall_time_s", "fps")}
        for row in rows(state)
    ]


DQN = {"name": "dqn", "learning_starts": 64, "batch_size": 16, "n_step": 3}


@pytest.mark.parametrize(
    "replay",
    [{"storage": "tensor"}, {"storage": "memmap"}, {"storage": "tensor", "prioritized": True}],
    ids=["tensor", "memmap", "prioritized"],
)
def test_a_stopped_run_resumed_from_python_matches_an_unbroken_one(tmp_path, replay):
    from rlcli.trainer.state import Hooks

    sections = {
        "algo": {**DQN, "replay": replay},
        "collector": {"frames_per_batch": 64, "total_frames": 640},
        "checkpoint": {"every_frames": 0},
    }
    unbroken = train(build_run(small_config(tmp_path / "a", **sections)))
    stopped = train(build_run(small_config(tmp_path / "b", **sections)), hooks=Hooks(on_iteration_end=[stop_after(4)]))
    assert stopped.status == "interrupted" and stopped.checkpoint_frames == 256
    if replay["storage"] == "memmap":
        assert sorted(p.name for p in (stopped.run_dir / "replay").iterdir())[0].endswith(".memmap")
    resumed = train(build_run(small_config(tmp_path / "b", **sections)), resume=stopped.run_dir)
    assert resumed.status == "completed" and resumed.run_dir == stopped.run_dir
    assert comparable(resumed) == comparable(unbroken)


def test_a_checkpoint_with_ppos_old_key_resumes_as_a_new_one(tmp_path):
    """Checkpoints written before issue 45 hold iterations_done as "done"; a linear clip schedule reads
    it, so a count lost on the way would show in every later row's clip_epsilon."""
    import shutil

    from rlcli.trainer.state import Hooks

    sections = {
        "algo": {"clip_schedule": "linear"},
        "collector": {"frames_per_batch": 64, "total_frames": 384},
        "checkpoint": {"every_frames": 0},
    }
    stopped = train(build_run(small_config(tmp_path / "b", **sections)), hooks=Hooks(on_iteration_end=[stop_after(3)]))
    old = tmp_path / "old"
    shutil.copytree(stopped.run_dir, old)
    path = old / stopped.checkpoint_path.relative_to(stopped.run_dir)
    payload = torch.load(path, weights_only=True)
    algo_state = payload["ranks"][0]["algo_state"]
    assert algo_state["iterations_done"] == 3 and "done" not in algo_state
    algo_state["done"] = algo_state.pop("iterations_done")
    torch.save(payload, path)
    resumed = {
        folder: train(build_run(small_config(tmp_path / "b", **sections)), resume=folder)
        for folder in (stopped.run_dir, old)
    }
    assert [state.run.algo.iterations_done for state in resumed.values()] == [6, 6]
    assert comparable(resumed[old]) == comparable(resumed[stopped.run_dir])
    unbroken = train(build_run(small_config(tmp_path / "a", **sections)))
    clips = [row["stats/clip_epsilon"] for row in comparable(unbroken)]
    assert [row["stats/clip_epsilon"] for row in comparable(resumed[old])] == clips and len(set(clips)) == 6


def test_resume_without_the_replay_buffer_starts_it_empty(tmp_path):
    from rlcli.trainer.state import Hooks

    sections = {
        "algo": DQN,
        "collector": {"frames_per_batch": 64, "total_frames": 640},
        "checkpoint": {"every_frames": 0, "replay": False},
    }
    stopped = train(build_run(small_config(tmp_path, **sections)), hooks=Hooks(on_iteration_end=[stop_after(4)]))
    saved = torch.load(stopped.checkpoint_path, weights_only=True)
    assert saved["ranks"][0]["algo_state"]["replay"]["buffer"]["storage"] is None
    resumed = train(build_run(small_config(tmp_path, **sections)), resume=stopped.run_dir)
    after = rows(resumed)
    sizes = [float(r["stats/buffer_size"]) for r in after]
    # Refilled from the first batch after the resume: at most its 64 frames (reset steps hold none).
    assert sizes[4] <= 64 < sizes[3] and sizes[5] > sizes[4]


# gymnasium's AsyncVectorEnv forks its workers through multiprocessing: a real child process.
@pytest.mark.integration
def test_resumed_async_envs_are_reseeded_and_keep_stepping(tmp_path):
    """Subprocess envs cannot be captured: they restart from new seeds, and their observations
    still come from the workers (not from a copy detached from their shared memory)."""
    from rlcli.trainer.state import Hooks

    sections = {
        "env": {"id": "CartPole-v1", "num_envs": 2, "vectorization": "async"},
        "collector": {"frames_per_batch": 64, "total_frames": 384},
        "checkpoint": {"every_frames": 0},
    }
    stopped = train(build_run(small_config(tmp_path, **sections)), hooks=Hooks(on_iteration_end=[stop_after(3)]))
    run = build_run(small_config(tmp_path, **sections))
    seen = []
    resumed = train(
        run,
        resume=stopped.run_dir,
        hooks=Hooks(on_iteration_end=[lambda s: seen.append(run.source.batch["observation"].clone())]),
    )
    assert resumed.status == "completed" and resumed.resumes[-1]["exact_envs"] is False
    last = seen[-1].reshape(-1, 4)
    assert torch.unique(last, dim=0).shape[0] > 2 * 4


def test_a_stop_off_the_logging_interval_resumes_to_the_rows_of_an_unbroken_run(tmp_path):
    from rlcli.trainer.state import Hooks

    sections = {
        "collector": {"frames_per_batch": 64, "total_frames": 640},
        "logger": {"interval": 3},
        "checkpoint": {"every_frames": 0},
    }
    unbroken = train(build_run(small_config(tmp_path / "a", **sections)))
    stopped = train(build_run(small_config(tmp_path / "b", **sections)), hooks=Hooks(on_iteration_end=[stop_after(4)]))
    # The stop writes its own row (4), which an unbroken run does not have.
    assert [r["iteration"] for r in rows(stopped)] == ["3", "4"]
    resumed = train(build_run(small_config(tmp_path / "b", **sections)), resume=stopped.run_dir)
    assert [r["iteration"] for r in rows(resumed)] == ["3", "6", "9", "10"]
    assert comparable(resumed) == comparable(unbroken)


# torch.compile's inductor backend builds its kernels with the C++ compiler (g++), a real process.
@pytest.mark.integration
def test_compiled_networks_train_and_keep_their_compile_time_apart(tmp_path):
    import json

    eager = train(build_run(small_config(tmp_path / "eager")))
    compiled = train(build_run(small_config(tmp_path / "compiled", run={"compile": "default"})))
    assert compiled.status == "completed"
    # The loop's timer keeps compile time apart (how, on fake clocks: tests/test_timing.py).
    assert compiled.timer.compiled and compiled.timer.compile_seconds > 0
    assert not eager.timer.compiled and eager.timer.compile_seconds == 0.0
    info = json.loads((compiled.run_dir / "run.json").read_text())
    assert info["compile_s"] == round(compiled.timer.compile_seconds, 3)
    assert json.loads((eager.run_dir / "run.json").read_text())["compile_s"] is None
    # Compiled in place: the checkpoints of both runs hold the same tensors, by name and shape.
    a = torch.load(eager.run_dir / "final.pt", weights_only=True)["agent"]
    b = torch.load(compiled.run_dir / "final.pt", weights_only=True)["agent"]
    assert {k: v.shape for k, v in a.items()} == {k: v.shape for k, v in b.items()}
