"""What the loop writes to the run folder, each writer on its own: run.json at the start and at a
stop, a checkpoint with everything a resume needs, and final.pt without the replay buffer."""

import json
from collections import deque

import pytest
import torch

from rlcli import keys
from rlcli.run import build_run
from rlcli.timing import Timer
from rlcli.trainer import checkpoint
from rlcli.trainer.saving import header, save_checkpoint, save_final, spaces, write_status
from rlcli.trainer.state import TrainState
from support.configs import small_config


def same(a, b) -> bool:
    """Whether two nested dicts/lists of tensors and plain values are equal, tensor by tensor."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    return a == b


@pytest.fixture
def run(tmp_path):
    built = build_run(small_config(tmp_path))
    yield built
    built.close()


def new_state(run, folder, clock=None) -> TrainState:
    folder.mkdir(parents=True, exist_ok=True)
    timer = Timer(run.device) if clock is None else Timer(run.device, clock=clock)
    return TrainState(run=run, run_dir=folder, timer=timer)


def read_run_json(state) -> dict:
    return json.loads((state.run_dir / "run.json").read_text(encoding="utf-8"))


def test_spaces_and_header_say_what_a_checkpoint_was_trained_for(run, tmp_path):
    assert spaces(run) == {"observation": "Box(4,)", "action": "Discrete(2)"}
    state = new_state(run, tmp_path / "run")
    state.iteration, state.frames = 3, 192
    assert header(state) == {
        "format": checkpoint.FORMAT,
        "algo": "ppo",
        "env": "CartPole-v1",
        "spaces": {"observation": "Box(4,)", "action": "Discrete(2)"},
        "iteration": 3,
        "frames": 192,
    }


def test_run_json_of_a_run_that_has_just_started(run, tmp_path):
    state = new_state(run, tmp_path / "run")
    write_status(state)
    info = read_run_json(state)
    assert info == {
        "status": "running",
        "error": None,
        "signal": None,
        "algo": "ppo",
        "env": "CartPole-v1",
        "device": "cpu",
        "action_mask": None,
        "iterations": 0,
        "frames": 0,
        "planned_iterations": 5,
        "planned_frames": 320,
        "world_size": 1,
        "threads": {
            "setting": "auto",
            "act": 1,
            "update": 1,
            "cores": run.threads.cores,
            "act_flops": run.threads.act_flops,
            "update_flops": run.threads.update_flops,
        },
        "precision": "fp32",
        "wall_time_s": 0.0,
        "fps": 0.0,
        "best_return": None,
        "last_return": None,
        "last_group_returns": {},
        "last_eval": None,
        "final_eval": None,
        "solved_at_frames": None,
        "solved_at_seconds": None,
        "timing": {},
        "compile_s": None,
        "started_at": state.started_at,
        "startup_s": None,
        "checkpoint": None,
        "resumes": [],
    }


def test_run_json_of_a_stopped_run_rounds_its_figures_and_carries_the_provenance(run, tmp_path, clock):
    state = new_state(run, tmp_path / "run", clock)
    for _ in range(2):
        with state.timer.phase("iteration"):
            with state.timer.phase("collect"):
                clock.advance(0.25)
            clock.advance(0.5)
        state.timer.end_iteration()
    state.status, state.stop_signal, state.error = "interrupted", "SIGTERM", None
    state.iteration, state.frames, state.wall_time = 3, 192, 1.23456
    state.best_return, state.last_return = 21.5, 17.0
    state.solved_at = (128, 0.98765)
    state.startup_s = 2.00049
    state.checkpoint_path = state.run_dir / "checkpoints" / "ckpt-000000000192.pt"
    state.checkpoint_frames, state.checkpoint_seconds = 192, 0.04321
    state.provenance = {"seed": 0, "overrides": ["--seed 0"], "env_packages": []}
    write_status(state)
    info = read_run_json(state)
    assert (info["status"], info["signal"], info["iterations"], info["frames"]) == ("interrupted", "SIGTERM", 3, 192)
    assert info["wall_time_s"] == 1.235 and info["fps"] == round(192 / 1.23456, 1) == 155.5
    assert (info["best_return"], info["last_return"]) == (21.5, 17.0)
    assert (info["solved_at_frames"], info["solved_at_seconds"]) == (128, 0.988)
    assert info["startup_s"] == 2.0
    assert info["checkpoint"] == {"latest": "checkpoints/ckpt-000000000192.pt", "frames": 192, "seconds_writing": 0.043}
    # The timer's breakdown over the phases the run has: collect is a third of each iteration.
    assert info["timing"] == {
        "collect": {"mean_ms": 250.0, "total_s": 0.5, "share": 0.3333},
        "iteration": {"mean_ms": 750.0, "total_s": 1.5, "share": 1.0},
    }
    assert (info["seed"], info["overrides"], info["env_packages"]) == (0, ["--seed 0"], [])


def test_a_checkpoint_holds_everything_a_resume_reads(run, tmp_path, clock):
    state = new_state(run, tmp_path / "run", clock)
    with state.timer.phase("collect"):
        clock.advance(0.5)
    state.timer.end_iteration()
    state.iteration, state.frames, state.episodes, state.seen_episodes = 2, 128, 9, 9
    state.returns, state.lengths = deque([10.0, 12.0], maxlen=100), deque([10, 12], maxlen=100)
    state.best_return, state.last_return = 12.0, 11.0
    state.eval_frames, state.last_eval = 64, {"eval/return_mean": 9.0}
    state.provenance = {"seed": 0}
    save_checkpoint(state)

    path = state.run_dir / "checkpoints" / "ckpt-000000000128.pt"
    assert state.checkpoint_path == path and state.checkpoint_frames == 128
    saved = torch.load(path, weights_only=True)
    assert {k: saved[k] for k in header(state)} == header(state)
    assert same(saved["agent"], run.algo.agent.state_dict())
    (rank,) = saved["ranks"]
    assert same(rank["algo_state"], run.algo.state_dict(replay=True))
    assert rank["seen_episodes"] == 9 and set(rank) == {"algo_state", "collector", "rng", "seen_episodes"}
    trainer = saved["trainer"]
    assert (trainer["returns"], trainer["lengths"], trainer["episodes"]) == ([10.0, 12.0], [10, 12], 9)
    assert (trainer["best_return"], trainer["last_return"], trainer["solved_at"]) == (12.0, 11.0, None)
    assert (trainer["timer_totals"], trainer["timer_iterations"]) == ({"collect": 0.5}, 1)
    assert (trainer["eval_frames"], trainer["last_eval"]) == (64, {"eval/return_mean": 9.0})
    assert trainer["provenance"] == {"seed": 0} and trainer["started_at"] == state.started_at
    assert trainer["wall_time"] >= 0


def test_final_pt_holds_the_weights_and_no_replay_buffer(tmp_path):
    run = build_run(small_config(tmp_path, algo={"name": "dqn", "learning_starts": 64, "batch_size": 16}))
    try:
        timer = Timer(run.device)
        run.algo.learn(run.source.next_batch(timer), timer)
        state = new_state(run, tmp_path / "run")
        state.iteration, state.frames = 1, 64
        save_final(state)
        final = torch.load(state.run_dir / "final.pt", weights_only=True)
        assert {k: final[k] for k in header(state)} == header(state)
        assert same(final["agent"], run.algo.agent.state_dict())
        assert same(final["algo_state"], run.algo.state_dict(replay=False))
        # The buffer now holds the batch: a checkpoint would carry it, final.pt does not.
        assert not same(run.algo.state_dict(replay=True), run.algo.state_dict(replay=False))
        assert not list(state.run_dir.glob(".*")), "a temporary file was left behind"
    finally:
        run.close()


def test_a_checkpoint_of_the_weights_after_learning_is_not_the_one_before(run, tmp_path):
    # Each save reads the agent of that moment, not a copy taken at the start.
    state = new_state(run, tmp_path / "run")
    state.iteration, state.frames = 1, 64
    save_checkpoint(state)
    timer = Timer(run.device)
    batch = run.source.next_batch(timer)
    assert batch[keys.VALID].any()
    run.algo.learn(batch, timer)
    state.iteration, state.frames = 2, 128
    save_checkpoint(state)
    first = torch.load(state.run_dir / "checkpoints" / "ckpt-000000000064.pt", weights_only=True)
    second = torch.load(state.run_dir / "checkpoints" / "ckpt-000000000128.pt", weights_only=True)
    assert not same(first["agent"], second["agent"])
    assert same(second["agent"], run.algo.agent.state_dict())
    assert (first["frames"], second["frames"]) == (64, 128)
