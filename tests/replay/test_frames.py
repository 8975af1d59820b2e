"""The frame-stack replay of Atari runs: each frame stored once, every stack rebuilt exactly as the env
gave it, episode starts never leaking frames of the previous episode, and the memory it counts."""

from __future__ import annotations

import pytest
import torch

from rlcli import keys
from rlcli.config.algos import ReplayConfig
from rlcli.config.load import load_config
from rlcli.replay.frames import FrameStackBuffer, frame_storage_bytes
from rlcli.replay.storage import storage_bytes
from rlcli.run import build_run
from rlcli.timing import Timer

pytest.importorskip("ale_py")

ATARI_SPEC = {
    keys.OBSERVATION: ((4, 84, 84), torch.uint8),
    keys.NEXT_OBSERVATION: ((4, 84, 84), torch.uint8),
    keys.ACTION: ((), torch.int64),
    keys.REWARD: ((), torch.float32),
    keys.TERMINATED: ((), torch.bool),
}


def collect(tmp_path, capacity: int, batches: int, game_frames: int = 124, **algo):
    """A DQN Breakout run's replay after ``batches`` batches of 32 steps x 2 envs of games cut at 31
    steps (``game_frames`` / 4 - 1), and those batches: at 124 each game's reset step is a batch's last
    row, so every batch starts a game that the previous batch's flags must announce; at 120 games
    start inside batches."""
    sets = [f'run.output_dir="{tmp_path}"', "run.device=cpu", "env.num_envs=2", "collector.frames_per_batch=64",
            f"env.kwargs.max_num_frames_per_episode={game_frames}", f"algo.replay.capacity={capacity}",
            "collector.total_frames=100000", *(f"algo.{key}={value}" for key, value in algo.items())]
    run = build_run(load_config("dqn_breakout", sets))
    try:
        timer, seen = Timer(run.device), []
        for _ in range(batches):
            batch = run.collector.collect(timer).clone()
            run.algo.replay.observe(batch)
            seen.append(batch)
    finally:
        run.close()
    return run.algo.replay.buffer, torch.cat(seen, 0)


@pytest.mark.parametrize("game_frames", [124, 120])
def test_every_stored_stack_is_rebuilt_byte_for_byte_across_episode_ends(tmp_path, game_frames):
    buffer, batch = collect(tmp_path, capacity=10_000, batches=4, game_frames=game_frames)
    assert isinstance(buffer, FrameStackBuffer)
    steps, envs = batch.batch_size
    # Every step but the newest (whose next observation is in no batch yet) can be rebuilt.
    rows = torch.arange((steps - 1) * envs)
    observation, next_observation = buffer.stacks(rows)
    torch.testing.assert_close(observation, batch[keys.OBSERVATION][:-1].reshape(-1, 4, 84, 84), rtol=0, atol=0)
    torch.testing.assert_close(next_observation, batch[keys.NEXT_OBSERVATION][:-1].reshape(-1, 4, 84, 84),
                               rtol=0, atol=0)
    # The check meant something: games ended inside batches and across a batch edge, and reset
    # stacks hold zeros that the previous game's frames must not fill.
    valid = batch[keys.VALID]
    resets = (~valid).any(1).nonzero().squeeze(1).tolist()
    assert resets == ([31, 63, 95, 127] if game_frames == 124 else [30, 61, 92, 123])
    assert len(buffer) == (steps - 1) * envs


def test_after_the_ring_wraps_stacks_are_still_exact_and_the_overwritten_ones_never_drawn(tmp_path):
    buffer, batch = collect(tmp_path, capacity=80, batches=4)
    assert buffer.filled == buffer.steps == 40
    steps, envs = batch.batch_size
    generator = torch.Generator().manual_seed(0)
    sample = buffer.sample(2048, generator)
    step, env = sample[keys.INDEX] // envs, sample[keys.INDEX] % envs
    # Slot s holds the newest global step that s stands for.
    newest = steps - 1
    global_step = newest - ((newest - step) % buffer.steps)
    assert int(global_step.min()) >= steps - buffer.steps + 3 and int(global_step.max()) < newest
    assert bool(batch[keys.VALID][global_step, env].all())
    torch.testing.assert_close(sample[keys.OBSERVATION], batch[keys.OBSERVATION][global_step, env], rtol=0, atol=0)
    torch.testing.assert_close(sample[keys.NEXT_OBSERVATION], batch[keys.NEXT_OBSERVATION][global_step, env],
                               rtol=0, atol=0)
    torch.testing.assert_close(sample[keys.ACTION], batch[keys.ACTION][global_step, env])


def test_prioritized_frames_draw_high_priorities_and_never_reset_steps(tmp_path):
    buffer, batch = collect(tmp_path, capacity=10_000, batches=2, **{"replay.prioritized": "true"})
    generator = torch.Generator().manual_seed(0)
    favoured = torch.tensor([10, 11])
    buffer.update_priorities(favoured, torch.tensor([1000.0, 1000.0]))
    sample = buffer.sample(512, generator)
    assert torch.isin(sample[keys.INDEX], favoured).float().mean() > 0.5
    flat_valid = batch[keys.VALID].reshape(-1)
    assert bool(flat_valid[sample[keys.INDEX]].all())


def test_a_million_atari_transitions_count_one_frame_each():
    cfg = ReplayConfig(capacity=1_000_000)
    frames = frame_storage_bytes(cfg, ATARI_SPEC, num_envs=8)
    assert frames <= 7.5e9 < storage_bytes(cfg, ATARI_SPEC) / 7
    small = FrameStackBuffer(ReplayConfig(capacity=64), ATARI_SPEC, num_envs=8, device=torch.device("cpu"))
    small._allocate()
    assert sum(t.nbytes for t in small.tensors.values()) == frame_storage_bytes(ReplayConfig(capacity=64),
                                                                                ATARI_SPEC, num_envs=8)


def test_state_dict_round_trip_samples_the_same_transitions(tmp_path):
    buffer, _ = collect(tmp_path, capacity=80, batches=3)
    copy = FrameStackBuffer(buffer.cfg, buffer.spec, num_envs=2, device=torch.device("cpu"))
    copy.load_state_dict(buffer.state_dict())
    first = buffer.sample(64, torch.Generator().manual_seed(3))
    second = copy.sample(64, torch.Generator().manual_seed(3))
    assert torch.equal(first[keys.INDEX], second[keys.INDEX])
    assert torch.equal(first[keys.NEXT_OBSERVATION], second[keys.NEXT_OBSERVATION])


def test_n_step_atari_replay_stores_whole_observations(tmp_path):
    buffer, _ = collect(tmp_path, capacity=1000, batches=1, n_step=3)
    assert not isinstance(buffer, FrameStackBuffer)
