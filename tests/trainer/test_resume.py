"""Resuming from a run folder, function by function: the rows kept, the lock released, the
checkpoint's counters taken over, and checkpoints refused before anything is restored or
written (the command-line messages are in tests/cli/test_resume.py)."""

import hashlib
import json
import os
from collections import deque
from pathlib import Path

import pytest
import torch

from rlcli.config.errors import InputError
from rlcli.run import build_run
from rlcli.timing import Timer
from rlcli.trainer.checkpoint import CheckpointError
from rlcli.trainer.resume import continue_from, kept_rows, release, restore, resume_config_problems
from rlcli.trainer.run_folder import lock_folder
from rlcli.trainer.state import TrainState
from support.configs import STOP_AFTER, small_config


def folder_contents(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.md5(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def latest_checkpoint(folder: Path) -> Path:
    return sorted(folder.glob("checkpoints/ckpt-*.pt"))[-1]


def rewrite_checkpoint(folder: Path, change) -> None:
    path = latest_checkpoint(folder)
    payload = torch.load(path, weights_only=True)
    change(payload)
    torch.save(payload, path)


@pytest.mark.parametrize(("interval", "iteration", "kept"), [(1, 4, 4), (3, 4, 3), (3, 6, 6), (3, 2, 1), (5, 7, 6)])
def test_kept_rows_drop_the_row_a_stop_wrote_off_the_interval(tmp_path, interval, iteration, kept):
    run = build_run(small_config(tmp_path, logger={"interval": interval}))
    try:
        state = TrainState(run=run, run_dir=tmp_path, timer=Timer(run.device))
        state.iteration, state.frames = iteration, iteration * 64
        assert kept_rows(state) == (kept, iteration * 64)
    finally:
        run.close()


def test_resume_config_problems_allow_only_budget_logging_and_timing():
    from rlcli.config.load import load_config
    from rlcli.config.presets import find_preset

    saved = load_config(find_preset("ppo_cartpole"))
    allowed = load_config(
        find_preset("ppo_cartpole"), ["collector.total_frames=999999", "logger.interval=5", "timing.enabled=false"]
    )
    assert resume_config_problems(saved, allowed) == []
    changed = load_config(find_preset("ppo_cartpole"), ["algo.gamma=0.5", "run.seed=3"])
    problems = resume_config_problems(saved, changed)
    assert len(problems) == 2 and problems[0].startswith("run.seed (0 in the run, 3 now)")
    assert any(p.startswith("algo.gamma") for p in problems)


def test_release_closes_the_lock_and_none_is_no_lock(tmp_path):
    lock = lock_folder(tmp_path)
    if lock is None:
        pytest.skip("no flock on this platform")
    with pytest.raises(InputError, match="another rlcli process is training in it"):
        lock_folder(tmp_path)
    release(lock)
    with pytest.raises(OSError):
        os.fstat(lock)
    release(lock_folder(tmp_path))
    release(None)


def test_a_resumed_state_takes_over_the_checkpoints_counters_windows_and_history(stopped_run):
    info = json.loads((stopped_run.folder / "run.json").read_text(encoding="utf-8"))
    saved = torch.load(latest_checkpoint(stopped_run.folder), weights_only=True)
    run = build_run(stopped_run.config)
    try:
        lock, payload = restore(run, stopped_run.folder)
        release(lock)
        assert run.folder.path == stopped_run.folder
        window = run.cfg.run.return_window
        state = TrainState(
            run=run,
            run_dir=stopped_run.folder,
            timer=Timer(run.device),
            provenance={"seed": 99, "command": "rlcli train --resume", "overrides": ["-q"]},
            returns=deque(maxlen=window),
            lengths=deque(maxlen=window),
        )
        continue_from(state, payload)
    finally:
        run.close()
    trainer = saved["trainer"]
    assert (state.iteration, state.frames) == (STOP_AFTER, STOP_AFTER * 64) == (info["iterations"], info["frames"])
    assert state.checkpoint_frames == STOP_AFTER * 64 and state.checkpoint_path == latest_checkpoint(stopped_run.folder)
    assert (state.wall_time, state.started_at) == (trainer["wall_time"], trainer["started_at"])
    assert list(state.returns) == trainer["returns"] and len(state.returns) > 0
    assert list(state.lengths) == trainer["lengths"] and state.returns.maxlen == window
    assert state.episodes == trainer["episodes"] and state.seen_episodes == saved["ranks"][0]["seen_episodes"]
    assert state.best_return == trainer["best_return"] == info["best_return"]
    assert (state.timer.totals, state.timer.iterations) == (trainer["timer_totals"], STOP_AFTER)
    # The run's provenance is its start's; the resume is recorded with this command's.
    assert state.provenance == trainer["provenance"] and state.provenance["seed"] == 0
    (entry,) = state.resumes
    assert entry["from_frames"] == STOP_AFTER * 64 and entry["checkpoint"] == latest_checkpoint(stopped_run.folder).name
    assert entry["exact_envs"] is True
    assert (entry["command"], entry["overrides"]) == ("rlcli train --resume", ["-q"])


def test_a_resume_restores_the_weights_of_the_checkpoint(stopped_run):
    saved = torch.load(latest_checkpoint(stopped_run.folder), weights_only=True)
    run = build_run(stopped_run.config)
    try:
        release(restore(run, stopped_run.folder)[0])
        for name, value in run.algo.agent.state_dict().items():
            assert torch.equal(value, saved["agent"][name]), name
    finally:
        run.close()


def refused(stopped_run, error: type[Exception], match: str) -> None:
    """Restoring the folder raises ``error``; the run's weights, the folder and its lock are untouched."""
    before = folder_contents(stopped_run.folder)
    run = build_run(stopped_run.config)
    try:
        weights = {k: v.clone() for k, v in run.algo.agent.state_dict().items()}
        with pytest.raises(error, match=match):
            restore(run, stopped_run.folder)
        assert all(torch.equal(v, weights[k]) for k, v in run.algo.agent.state_dict().items())
    finally:
        run.close()
    assert folder_contents(stopped_run.folder) == before
    # A failed restore lets go of the folder: the next attempt is not told it is still training.
    release(lock_folder(stopped_run.folder))


def test_a_checkpoint_without_the_training_state_is_refused_naming_what_is_missing(stopped_run):
    def strip(payload):
        del payload["trainer"]["returns"], payload["trainer"]["episodes"]

    rewrite_checkpoint(stopped_run.folder, strip)
    refused(
        stopped_run,
        CheckpointError,
        r"not the training state a resume needs \(no trainer\.returns, "
        r"trainer\.episodes\); rlcli eval can still use it",
    )


def test_a_checkpoint_without_a_ranks_state_is_refused(stopped_run):
    rewrite_checkpoint(stopped_run.folder, lambda payload: payload["ranks"][0].pop("rng"))
    refused(stopped_run, CheckpointError, r"\(no ranks\.rng\)")


def test_a_solved_run_has_nothing_to_continue(stopped_run):
    def solve(payload):
        payload["trainer"]["solved_at"] = [128, 1.5]

    rewrite_checkpoint(stopped_run.folder, solve)
    refused(
        stopped_run, InputError, r"reached run\.stop_at_return \(10000\) at 128 frames: there is nothing to continue"
    )


def test_env_state_that_does_not_fit_is_a_checkpoint_error(stopped_run):
    def other_envs(payload):
        payload["ranks"][0]["collector"]["envs"]["vector"][-1]["class"] = "SyncVectorEnv"

    rewrite_checkpoint(stopped_run.folder, other_envs)
    run = build_run(stopped_run.config)
    try:
        with pytest.raises(
            CheckpointError,
            match="its training state does not fit this run: EnvStateError: the saved "
            "envs are RecordEpisodeStatistics > SyncVectorEnv",
        ):
            restore(run, stopped_run.folder)
    finally:
        run.close()
    release(lock_folder(stopped_run.folder))
