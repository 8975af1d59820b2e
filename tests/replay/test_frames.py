"""The frame-stack replay of Atari runs: each frame stored once, every stack rebuilt exactly as ale-py's
vector env gave it, episode starts and breaks never leaking frames of another episode, and the memory
it counts.

The batches come from a real AtariVectorEnv, built as the collector builds them (NEXT_STEP: the step
after an episode end is not valid). Each transition's reward is replaced by its id, ``step * N + env``
of its stream, so that every sampled row can be traced back to the stacks the env returned.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.config.fields import ReplayConfig
from rlcli.config.load import load_config
from rlcli.replay.frames import FrameStackBuffer, frame_storage_bytes
from rlcli.replay.storage import storage_bytes
from rlcli.run import build_run
from rlcli.timing import Timer

ale_py = pytest.importorskip("ale_py")

CPU = torch.device("cpu")
N, T = 2, 5
# Games cut at 60 frames end every 16 steps (15 steps and the reset step): with batches of 5
# steps, reset steps fall at every row of a batch in turn, the first and the last included.
GAME_FRAMES = 60
SPEC = {
    keys.OBSERVATION: ((4, 84, 84), torch.uint8),
    keys.NEXT_OBSERVATION: ((4, 84, 84), torch.uint8),
    keys.ACTION: ((), torch.int64),
    keys.REWARD: ((), torch.float32),
    keys.TERMINATED: ((), torch.bool),
}


@dataclass
class Stream:
    """One env run: its steps and, by transition id, what the env returned."""

    steps: TensorDict
    """[steps, N], every key of a batch."""

    def batches(self, start: int = 0, stop: int | None = None) -> list[TensorDict]:
        """The steps from ``start`` to ``stop`` in batches of T."""
        steps = self.steps[start:stop]
        return [steps[t : t + T] for t in range(0, steps.batch_size[0], T)]

    @property
    def observation(self) -> torch.Tensor:
        """[steps * N, 4, 84, 84] uint8, by id."""
        return self.steps[keys.OBSERVATION].flatten(0, 1)

    @property
    def next_observation(self) -> torch.Tensor:
        return self.steps[keys.NEXT_OBSERVATION].flatten(0, 1)

    @property
    def valid(self) -> torch.Tensor:
        """[steps * N] bool, by id."""
        return self.steps[keys.VALID].flatten()


def rollout(seed: int, batches: int) -> Stream:
    """``batches`` [T, N] batches of Breakout with random actions, as the collector fills them."""
    import gymnasium as gym

    gym.register_envs(ale_py)
    envs = gym.make_vec(
        "ALE/Breakout-v5",
        num_envs=N,
        vectorization_mode="vector_entry_point",
        repeat_action_probability=0.0,
        max_num_frames_per_episode=GAME_FRAMES,
    )
    rng = np.random.default_rng(seed)
    obs, _ = envs.reset(seed=seed)
    resetting = np.zeros(N, dtype=bool)
    out = []
    for b in range(batches):
        data = {
            key: []
            for key in (
                keys.OBSERVATION,
                keys.NEXT_OBSERVATION,
                keys.ACTION,
                keys.TERMINATED,
                keys.TRUNCATED,
                keys.VALID,
            )
        }
        for _ in range(T):
            action = rng.integers(0, 4, N)
            data[keys.OBSERVATION].append(obs)
            obs, _, terminated, truncated, _ = envs.step(action)
            data[keys.NEXT_OBSERVATION].append(obs)
            data[keys.ACTION].append(action)
            data[keys.TERMINATED].append(terminated)
            data[keys.TRUNCATED].append(truncated)
            # NEXT_STEP: the step after an episode end is the reset step, no transition.
            data[keys.VALID].append(~resetting)
            resetting = terminated | truncated
        batch = {key: torch.from_numpy(np.stack(value)) for key, value in data.items()}
        batch[keys.REWARD] = torch.arange(b * T * N, (b + 1) * T * N, dtype=torch.float32).view(T, N)
        out.append(TensorDict(batch, batch_size=[T, N]))
    envs.close()
    return Stream(torch.cat(out, 0))


@pytest.fixture(scope="module")
def stream() -> Stream:
    return rollout(seed=0, batches=18)


def make(capacity: int, **replay) -> FrameStackBuffer:
    return FrameStackBuffer(ReplayConfig(capacity=capacity, **replay), SPEC, num_envs=N, stack=4, device=CPU)


def sampleable_rows(buffer: FrameStackBuffer) -> torch.Tensor:
    """Flat rows of every transition that the buffer may draw now."""
    oldest, count = buffer.available()
    steps = (torch.arange(count) + oldest) % buffer.steps
    rows = (steps[:, None] * N + torch.arange(N)).reshape(-1)
    return rows[buffer.tensors[keys.VALID].reshape(-1)[rows]]


def assert_exact(sample: TensorDict, stream: Stream) -> None:
    """Every row of ``sample`` is a valid transition of ``stream`` with both stacks as the env gave them."""
    ids = sample[keys.REWARD].long()
    assert bool(stream.valid[ids].all())
    assert torch.equal(sample[keys.OBSERVATION], stream.observation[ids])
    assert torch.equal(sample[keys.NEXT_OBSERVATION], stream.next_observation[ids])


def rebuilt(buffer: FrameStackBuffer, rows: torch.Tensor) -> TensorDict:
    """The transitions at flat ``rows``, as a sample carries them."""
    observation, next_observation = buffer.stacks(rows)
    reward = buffer.tensors[keys.REWARD].reshape(-1)[rows]
    return TensorDict(
        {keys.OBSERVATION: observation, keys.NEXT_OBSERVATION: next_observation, keys.REWARD: reward},
        batch_size=[rows.numel()],
    )


def test_ale_reset_stacks_hold_zeros_before_the_first_frame(stream):
    # The buffer's episode starts reproduce this: zeros, not copies of the first frame.
    starts = torch.cat([torch.ones(N, dtype=torch.bool), ~stream.valid[:-N]])
    assert int(starts.sum()) == 12
    assert not bool(stream.observation[starts, :3].any())
    assert bool(stream.observation[starts, 3].flatten(1).any(1).all())


def test_every_stored_stack_is_rebuilt_byte_for_byte_across_episode_ends(stream):
    buffer = make(10_000)
    for batch in stream.batches():
        buffer.extend(batch)
    # Every step but the newest (whose next observation is in no batch yet) is exact, reset steps too.
    rows = torch.arange((stream.steps.batch_size[0] - 1) * N)
    observation, next_observation = buffer.stacks(rows)
    assert torch.equal(observation, stream.observation[rows])
    assert torch.equal(next_observation, stream.next_observation[rows])
    assert len(buffer) == rows.numel()
    # The check meant something: reset steps at every row of a batch, the first and the last too.
    resets = (~stream.valid).view(-1, N).all(1).nonzero().squeeze(1) % T
    assert sorted(resets.tolist()) == list(range(T))


def test_uniform_draws_skip_reset_steps(stream):
    buffer = make(10_000)
    for batch in stream.batches(0, 40):
        buffer.extend(batch)
    sample = buffer.sample(1024, torch.Generator().manual_seed(0))
    assert_exact(sample, stream)
    assert sample[keys.ACTION].shape == (1024,) and sample[keys.INDEX].dtype == torch.int64
    assert int((~stream.valid[: 8 * T * N]).sum()) == 2 * N


def test_after_the_ring_wraps_samples_stay_exact_and_the_overwritten_ones_are_never_drawn(stream):
    buffer = make(64)
    generator = torch.Generator().manual_seed(0)
    for b, batch in enumerate(stream.batches()):
        buffer.extend(batch)
        sample = buffer.sample(64, generator)
        assert_exact(sample, stream)
        newest = (b + 1) * T - 1
        step = sample[keys.REWARD].long() // N
        # Once full, steps newest - 31 .. newest - 29 lose older frames to the next write; the newest
        # has no next observation yet.
        oldest = newest - buffer.steps + 4 if buffer.filled == buffer.steps else 0
        assert int(step.min()) >= oldest and int(step.max()) < newest
    assert buffer.filled == buffer.steps == 32


def test_a_million_atari_transitions_count_one_frame_each(stream):
    cfg = ReplayConfig(capacity=1_000_000)
    frames = frame_storage_bytes(cfg, SPEC, num_envs=8, stack=4)
    assert 84 * 84 * 1_000_000 < frames <= 7.5e9 < storage_bytes(cfg, SPEC) / 7
    for replay in ({}, {"prioritized": True}):
        buffer = make(64, **replay)
        buffer.extend(stream.batches(0, T)[0])
        assert buffer.allocated_bytes == frame_storage_bytes(buffer.cfg, SPEC, num_envs=N)
    with pytest.raises(ValueError, match="stack 3"):
        FrameStackBuffer(ReplayConfig(capacity=64), SPEC, num_envs=N, stack=3, device=CPU)


def test_state_dict_round_trip_samples_and_continues_the_same(stream):
    buffer = make(64, prioritized=True)
    for batch in stream.batches(0, 35):
        buffer.extend(batch)
    buffer.update_priorities(torch.tensor([10, 11]), torch.tensor([5.0, 0.5]))
    copy = make(64, prioritized=True)
    copy.load_state_dict(buffer.state_dict())
    for replay in (buffer, copy):
        replay.extend(stream.batches(35, 40)[0])
    first = buffer.sample(64, torch.Generator().manual_seed(3))
    second = copy.sample(64, torch.Generator().manual_seed(3))
    assert torch.equal(first[keys.INDEX], second[keys.INDEX])
    assert torch.equal(first[keys.NEXT_OBSERVATION], second[keys.NEXT_OBSERVATION])
    assert torch.equal(first[keys.WEIGHT], second[keys.WEIGHT])
    assert_exact(second, stream)


def test_memmap_frames_are_exact_and_reopen(stream, tmp_path):
    cfg = {"storage": "memmap", "directory": str(tmp_path / "replay")}
    buffer = make(64, **cfg)
    for batch in stream.batches(0, 25):
        buffer.extend(batch)
    assert buffer.location == tmp_path / "replay" and (tmp_path / "replay" / "frame.memmap").exists()
    state = buffer.state_dict()
    copy = make(64, **cfg)
    copy.load_state_dict(state)
    assert_exact(copy.sample(256, torch.Generator().manual_seed(1)), stream)


def test_prioritized_draws_favour_high_priorities_and_never_unsampleable_rows(stream):
    buffer = make(10_000, prioritized=True)
    for batch in stream.batches(0, 40):
        buffer.extend(batch)
    # Exactly the sampleable rows carry priority: reset steps and the newest step none, and every
    # batch's last step once the next batch has brought its next observation.
    leaves = buffer.tree.leaves[: buffer.steps * N]
    assert torch.equal((leaves > 0).nonzero().squeeze(1), sampleable_rows(buffer))
    assert len(sampleable_rows(buffer)) == (8 * T - 1 - 2) * N
    favoured = torch.tensor([10, 11])
    buffer.update_priorities(favoured, torch.tensor([1000.0, 1000.0]))
    sample = buffer.sample(512, torch.Generator().manual_seed(0))
    assert torch.isin(sample[keys.INDEX], favoured).float().mean() > 0.5
    assert_exact(sample, stream)
    assert float(sample[keys.WEIGHT].max()) == 1.0


def test_a_resume_that_reset_the_envs_never_joins_two_episodes(stream):
    buffer = make(10_000, prioritized=True)
    for batch in stream.batches(0, 15):
        buffer.extend(batch)
    # ale-py's state is not saved: a resumed run resets its envs, here in the middle of a game
    # (steps 0 to 14); the game from step 16 on stands for the new one.
    resumed = make(10_000, prioritized=True)
    resumed.load_state_dict(buffer.state_dict())
    for batch in stream.batches(16, 36):
        resumed.extend(batch)
    rows = sampleable_rows(resumed)
    assert_exact(rebuilt(resumed, rows), stream)
    # Step 14 lost its next observation; the stacks after the break start a game (zeros first).
    steps = resumed.tensors[keys.REWARD].reshape(-1)[rows].long() // N
    assert sorted(set(steps.tolist())) == [*range(14), *range(16, 31), *range(32, 35)]
    assert_exact(resumed.sample(1024, torch.Generator().manual_seed(0)), stream)


def test_envs_restored_without_their_emulator_state_are_caught_by_the_rebuilt_stacks(stream):
    buffer = make(10_000)
    for batch in stream.batches(0, 15):
        buffer.extend(batch)
    # The collector acts on its saved observation (step 15's), but the emulator is elsewhere: the
    # env returns the frames of steps 21 to 25 on.
    restored = stream.steps[20:25].clone()
    restored[0] = stream.steps[15].clone().set(keys.REWARD, -torch.ones(N))
    buffer.extend(restored)
    buffer.extend(stream.steps[25:30])
    rows = sampleable_rows(buffer)
    assert_exact(rebuilt(buffer, rows), stream)
    # Step 14's next observation is step 15's, as saved; the stacks of 21 to 23 hold step 15's
    # frame where the env had step 20's, and the saved step's next observation is step 21's.
    steps = sorted(set((buffer.tensors[keys.REWARD].reshape(-1)[rows].long() // N).tolist()))
    assert steps == [*range(15), *range(24, 29)]


def test_a_batch_longer_than_the_ring_keeps_its_newest_steps(stream):
    buffer = make(64)
    buffer.extend(stream.steps[0:45])
    buffer.extend(stream.steps[45:50])
    rows = sampleable_rows(buffer)
    assert_exact(rebuilt(buffer, rows), stream)
    steps = sorted(set((buffer.tensors[keys.REWARD].reshape(-1)[rows].long() // N).tolist()))
    assert steps == [s for s in range(21, 49) if s != 31 and s != 47]
    assert_exact(buffer.sample(256, torch.Generator().manual_seed(0)), stream)


def test_a_buffer_started_mid_episode_skips_the_stacks_it_cannot_rebuild(stream):
    # A buffer loaded without its steps meets envs that went on: older frames it never saw.
    buffer = make(10_000)
    for batch in stream.batches(5, 20):
        buffer.extend(batch)
    rows = sampleable_rows(buffer)
    ids = buffer.tensors[keys.REWARD].reshape(-1)[rows].long()
    assert_exact(rebuilt(buffer, rows), stream)
    # Steps 5 to 7 of the stream (the first three in the buffer) miss older frames or the next
    # stack's; the reset step at 15 is never drawn; 19 is the newest.
    steps = sorted(set((ids // N).tolist()))
    assert steps == [s for s in range(8, 19) if s != 15]


def test_dqn_breakout_stores_frames_through_the_collector(tmp_path):
    # Batches of 32 steps: games end inside them and with the last step of each.
    sets = [
        f'run.output_dir="{tmp_path}"',
        "run.device=cpu",
        "env.num_envs=2",
        "collector.frames_per_batch=64",
        f"env.kwargs.max_num_frames_per_episode={GAME_FRAMES}",
        "algo.replay.capacity=1000",
        "collector.total_frames=100000",
    ]
    run = build_run(load_config("dqn_breakout", sets))
    try:
        timer, seen = Timer(run.device), []
        for _ in range(2):
            batch = run.source.next_batch(timer).clone()
            run.algo.replay.observe(batch)
            seen.append(batch)
    finally:
        run.close()
    buffer, batch = run.algo.replay.buffer, torch.cat(seen, 0)
    assert isinstance(buffer, FrameStackBuffer)
    rows = torch.arange((batch.batch_size[0] - 1) * 2)
    observation, next_observation = buffer.stacks(rows)
    assert torch.equal(observation, batch[keys.OBSERVATION][:-1].flatten(0, 1))
    assert torch.equal(next_observation, batch[keys.NEXT_OBSERVATION][:-1].flatten(0, 1))


def test_n_step_atari_replay_stores_whole_observations(tmp_path):
    sets = [
        f'run.output_dir="{tmp_path}"',
        "run.device=cpu",
        "env.num_envs=2",
        "collector.frames_per_batch=64",
        "algo.replay.capacity=1000",
        "collector.total_frames=100000",
        "algo.n_step=3",
    ]
    run = build_run(load_config("dqn_breakout", sets))
    run.close()
    assert not isinstance(run.algo.replay.buffer, FrameStackBuffer)
