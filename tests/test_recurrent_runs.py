"""A trained recurrent run (ppo_lstm_cartpolenovel, small) through the commands that play it: its
checkpoint holds the envs' memory, ``rlcli eval`` replays the same episodes (each evaluation starts from
fresh memory), ``rlcli collect`` and ``eval --video`` (integration: ffmpeg) play it with its memory."""

from __future__ import annotations

import json

import pytest
import torch

from rlcli.trainer import checkpoint
from support.runs import train_cli


@pytest.fixture(scope="module")
def recurrent_run(tmp_path_factory):
    return train_cli(
        tmp_path_factory.mktemp("recurrent") / "runs",
        "ppo_lstm_cartpolenovel",
        "--set",
        "collector.total_frames=1024",
        "--set",
        "checkpoint.every_frames=512",
        "--set",
        "network.memory_size=16",
        "--set",
        "algo.epochs=2",
        "--set",
        "eval.final_episodes=4",
    )


def test_the_checkpoint_holds_each_envs_memory_and_episode_starts(recurrent_run):
    (path,) = sorted((recurrent_run.folder / "checkpoints").glob("ckpt-*.pt"))[-1:]
    state = checkpoint.load(path)
    carry = state["ranks"][0]["collector"]["carry"] if "ranks" in state else state["collector"]["carry"]
    # 8 envs, two cores (policy and value), an LSTM's hidden and cell states of 16 units.
    assert carry["memory"].shape == (8, 2, 2, 16)
    assert carry["memory"].abs().sum() > 0
    assert carry["first"].dtype == torch.bool and carry["first"].shape == (8,)


def test_eval_replays_the_same_episodes_from_fresh_memory(recurrent_run, cli):
    runs = [cli("eval", recurrent_run.folder, "--episodes", "3", "--json") for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stdout + runs[0].stderr
    first, second = (json.loads(r.stdout) for r in runs)
    assert first["returns"] == second["returns"] and len(first["returns"]) == 3


def test_collect_plays_the_recurrent_policy(recurrent_run, cli, tmp_path):
    out = tmp_path / "data" / "cartpolenovel-lstm-v0"
    result = cli("collect", recurrent_run.folder, "--steps", "200", "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "wrote 200 steps" in result.stdout


@pytest.mark.integration
def test_video_plays_the_recurrent_policy(recurrent_run, cli, tmp_path):
    # imageio writes the video through an ffmpeg process.
    video = tmp_path / "episode.mp4"
    result = cli("eval", recurrent_run.folder, "--episodes", "1", "--video", video)
    assert result.returncode == 0, result.stdout + result.stderr
    assert video.stat().st_size > 0
