import math
import re

import numpy as np
import pydantic
import pytest
import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.config.errors import ConfigError
from rlcli.config.fields import ReplayConfig
from rlcli.replay.storage import ReplayBuffer, check_storage, storage_bytes

CPU = torch.device("cpu")

SPEC = {
    keys.OBSERVATION: ((3,), torch.float32),
    keys.NEXT_OBSERVATION: ((3,), torch.float32),
    keys.ACTION: ((), torch.int64),
    keys.REWARD: ((), torch.float32),
    keys.TERMINATED: ((), torch.bool),
}


def transitions(first_id: int, T: int, N: int, valid: torch.Tensor | None = None) -> TensorDict:
    """A [T, N] batch whose transitions carry ids first_id, first_id + 1, ... in time-major order.

    Every key is a function of the id, so a stored row can be traced back to its transition.
    """
    ids = torch.arange(first_id, first_id + T * N).reshape(T, N)
    obs = ids.unsqueeze(-1).float() + torch.tensor([0.0, 0.25, 0.5])
    data = {
        keys.OBSERVATION: obs,
        keys.NEXT_OBSERVATION: obs + 1000.0,
        keys.ACTION: ids.clone(),
        keys.REWARD: ids.float() * -0.5,
        keys.TERMINATED: ids % 3 == 0,
        keys.VALID: torch.ones(T, N, dtype=torch.bool) if valid is None else valid,
    }
    return TensorDict(data, batch_size=[T, N])


def expected_rows(ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """What the buffer should hold, key by key, for transitions with these ids ([K] int64)."""
    obs = ids.unsqueeze(-1).float() + torch.tensor([0.0, 0.25, 0.5])
    return {
        keys.OBSERVATION: obs,
        keys.NEXT_OBSERVATION: obs + 1000.0,
        keys.ACTION: ids,
        keys.REWARD: ids.float() * -0.5,
        keys.TERMINATED: ids % 3 == 0,
    }


def assert_slots(buffer: ReplayBuffer, slots: list[int], ids: list[int]) -> None:
    """Storage rows ``slots`` hold exactly the transitions ``ids``, in every key."""
    expected = expected_rows(torch.tensor(ids))
    index = torch.tensor(slots)
    for key, value in expected.items():
        torch.testing.assert_close(buffer.tensors[key].index_select(0, index), value, rtol=0, atol=0)


def make_buffer(capacity: int = 10, **cfg) -> ReplayBuffer:
    return ReplayBuffer(ReplayConfig(capacity=capacity, **cfg), SPEC, device=CPU)


def test_ring_keeps_the_newest_transitions_at_their_slots():
    buffer = make_buffer(10)

    buffer.extend(transitions(0, T=2, N=3))  # ids 0..5
    assert (buffer.cursor, buffer.size, len(buffer), buffer.added) == (6, 6, 6, 6)
    assert_slots(buffer, list(range(6)), list(range(6)))

    buffer.extend(transitions(6, T=2, N=3))  # ids 6..11: 6..9 fill the end, 10 and 11 wrap to slots 0, 1
    assert (buffer.cursor, buffer.size, buffer.added) == (2, 10, 12)
    assert_slots(buffer, list(range(10)), [10, 11, 2, 3, 4, 5, 6, 7, 8, 9])

    # 12 transitions (ids 12..23) into 10 slots: only the newest 10 (14..23) are kept,
    # written from the cursor on, wrapping once.
    buffer.extend(transitions(12, T=4, N=3))
    assert (buffer.cursor, buffer.size, buffer.added) == (2, 10, 24)
    assert_slots(buffer, list(range(10)), [22, 23, 14, 15, 16, 17, 18, 19, 20, 21])
    # Read from the cursor, the ring runs from the oldest to the newest transition.
    oldest_first = buffer.tensors[keys.ACTION].roll(-buffer.cursor)
    assert oldest_first.tolist() == list(range(14, 24))


def test_batch_larger_than_capacity_into_an_empty_buffer():
    buffer = make_buffer(10)
    buffer.extend(transitions(0, T=5, N=3))  # ids 0..14
    assert (buffer.cursor, buffer.size, buffer.added) == (0, 10, 15)
    assert_slots(buffer, list(range(10)), list(range(5, 15)))


def test_batch_exactly_filling_the_rest_of_the_ring_leaves_the_cursor_at_zero():
    buffer = make_buffer(10)
    buffer.extend(transitions(0, T=1, N=4))
    buffer.extend(transitions(4, T=2, N=3))
    assert (buffer.cursor, buffer.size) == (0, 10)
    assert_slots(buffer, list(range(10)), list(range(10)))
    buffer.extend(transitions(10, T=1, N=1))
    assert (buffer.cursor, buffer.size) == (1, 10)
    assert_slots(buffer, [0, 1], [10, 1])


def test_flat_batch_is_accepted():
    buffer = make_buffer(10)
    batch = transitions(0, T=1, N=4).reshape(-1)
    assert batch.batch_size == torch.Size([4])
    buffer.extend(batch)
    assert (buffer.cursor, buffer.size) == (4, 4)
    assert_slots(buffer, [0, 1, 2, 3], [0, 1, 2, 3])


def test_invalid_steps_never_enter_storage():
    buffer = make_buffer(10)
    valid = torch.tensor([[True, False, True], [False, True, True]])  # ids 0, 2, 4, 5 are valid
    buffer.extend(transitions(0, T=2, N=3, valid=valid))
    assert (buffer.cursor, buffer.size, buffer.added) == (4, 4, 4)
    assert_slots(buffer, [0, 1, 2, 3], [0, 2, 4, 5])

    # Seven more valid steps out of twelve: they wrap, and still no invalid id is stored.
    valid = torch.tensor([[False, True, True], [True, False, False], [True, True, False], [True, False, True]])
    buffer.extend(transitions(6, T=4, N=3, valid=valid))
    valid_ids = [6 + i for i, ok in enumerate(valid.reshape(-1).tolist()) if ok]
    assert valid_ids == [7, 8, 9, 12, 13, 15, 17]
    assert (buffer.cursor, buffer.size, buffer.added) == (1, 10, 11)
    assert_slots(buffer, list(range(10)), [17, 2, 4, 5, 7, 8, 9, 12, 13, 15])
    stored = set(buffer.tensors[keys.ACTION].tolist())
    invalid_ids = {6 + i for i, ok in enumerate(valid.reshape(-1).tolist()) if not ok} | {1, 3}
    assert not stored & invalid_ids


def test_all_invalid_batch_changes_nothing():
    buffer = make_buffer(10)
    buffer.extend(transitions(0, T=1, N=3))
    before = {key: value.clone() for key, value in buffer.tensors.items()}
    buffer.extend(transitions(100, T=2, N=3, valid=torch.zeros(2, 3, dtype=torch.bool)))
    assert (buffer.cursor, buffer.size, buffer.added) == (3, 3, 3)
    # Unfilled slots hold whatever torch.empty left there (NaN included): compare bit for bit.
    for key, value in buffer.tensors.items():
        torch.testing.assert_close(value, before[key], rtol=0, atol=0, equal_nan=True)


def test_invalid_steps_skipped_in_a_batch_larger_than_capacity():
    buffer = make_buffer(4)
    valid = torch.tensor([[True, False], [True, True], [False, True], [True, True]])  # ids 0, 2, 3, 5, 6, 7
    buffer.extend(transitions(0, T=4, N=2, valid=valid))
    assert (buffer.cursor, buffer.size, buffer.added) == (0, 4, 6)
    assert_slots(buffer, [0, 1, 2, 3], [3, 5, 6, 7])


def test_sample_shapes_dtypes_and_index():
    buffer = make_buffer(10)
    buffer.extend(transitions(0, T=1, N=7))
    sample = buffer.sample(32, torch.Generator().manual_seed(0))
    assert isinstance(sample, TensorDict)
    assert sample.batch_size == torch.Size([32])
    assert sample.device == CPU
    expected = {
        keys.OBSERVATION: ((32, 3), torch.float32),
        keys.NEXT_OBSERVATION: ((32, 3), torch.float32),
        keys.ACTION: ((32,), torch.int64),
        keys.REWARD: ((32,), torch.float32),
        keys.TERMINATED: ((32,), torch.bool),
        keys.INDEX: ((32,), torch.int64),
    }
    assert set(sample.keys()) == set(expected)  # no weight when uniform
    for key, (shape, dtype) in expected.items():
        assert sample[key].shape == torch.Size(shape), key
        assert sample[key].dtype == dtype, key
    # Each row is the stored transition at its index (ids equal slots here).
    for key, value in expected_rows(sample[keys.INDEX]).items():
        assert torch.equal(sample[key], value), key


def test_uniform_sample_comes_only_from_filled_slots():
    buffer = make_buffer(10)
    buffer.extend(transitions(0, T=1, N=7))
    index = buffer.sample(4000, torch.Generator().manual_seed(1))[keys.INDEX]
    assert int(index.min()) == 0 and int(index.max()) == 6
    counts = torch.bincount(index, minlength=7).double() / index.numel()
    assert float((counts - 1 / 7).abs().max()) < 0.03


def test_sample_is_reproducible_from_the_generator_seed():
    buffer = make_buffer(10)
    buffer.extend(transitions(0, T=2, N=5))
    first = buffer.sample(16, torch.Generator().manual_seed(3))[keys.INDEX]
    second = buffer.sample(16, torch.Generator().manual_seed(3))[keys.INDEX]
    other = buffer.sample(16, torch.Generator().manual_seed(4))[keys.INDEX]
    assert torch.equal(first, second)
    assert not torch.equal(first, other)


def test_sample_from_an_empty_buffer_raises():
    buffer = make_buffer(10)
    with pytest.raises(RuntimeError, match="empty"):
        buffer.sample(4, torch.Generator().manual_seed(0))


def test_memmap_files_live_in_the_directory_and_round_trip(tmp_path):
    folder = tmp_path / "replay"
    cfg = ReplayConfig(capacity=10, storage="memmap", directory=str(folder))
    buffer = ReplayBuffer(cfg, SPEC, device=CPU)
    assert buffer.location is None  # nothing allocated before the first extend
    buffer.extend(transitions(0, T=2, N=4))  # ids 0..7
    assert buffer.location == folder
    buffer.extend(transitions(8, T=1, N=4))  # ids 8..11: 10 and 11 wrap to slots 0, 1
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{key}.memmap" for key in SPEC)

    slot_ids = [10, 11, 2, 3, 4, 5, 6, 7, 8, 9]
    assert_slots(buffer, list(range(10)), slot_ids)
    # The bytes on disk are the transitions, not just a copy in memory.
    for key, (shape, dtype) in SPEC.items():
        np_dtype = torch.empty((), dtype=dtype).numpy().dtype
        on_disk = np.fromfile(folder / f"{key}.memmap", dtype=np_dtype)
        assert on_disk.size == 10 * math.prod(shape), key
        np.testing.assert_array_equal(on_disk.reshape(10, *shape), expected_rows(torch.tensor(slot_ids))[key].numpy())

    sample = buffer.sample(64, torch.Generator().manual_seed(0))
    ids = torch.tensor(slot_ids).index_select(0, sample[keys.INDEX])
    for key, value in expected_rows(ids).items():
        assert torch.equal(sample[key], value), key


def test_memmap_uses_the_default_directory_callable_when_none_is_configured(tmp_path):
    calls = []

    def default_folder():
        calls.append(1)
        return tmp_path / "run" / "replay"

    cfg = ReplayConfig(capacity=8, storage="memmap")
    buffer = ReplayBuffer(cfg, SPEC, device=CPU, directory=default_folder)
    assert calls == []  # the run folder may not exist yet at build time
    buffer.extend(transitions(0, T=1, N=5))
    buffer.extend(transitions(5, T=1, N=2))
    assert calls == [1]
    assert buffer.location == tmp_path / "run" / "replay"
    assert {p.name for p in buffer.location.iterdir()} == {f"{key}.memmap" for key in SPEC}
    assert_slots(buffer, list(range(7)), list(range(7)))


def test_configured_directory_wins_over_the_default_callable(tmp_path):
    cfg = ReplayConfig(capacity=4, storage="memmap", directory=str(tmp_path / "chosen"))
    buffer = ReplayBuffer(cfg, SPEC, device=CPU, directory=lambda: tmp_path / "default")
    buffer.extend(transitions(0, T=1, N=2))
    assert buffer.location == tmp_path / "chosen"
    assert (tmp_path / "chosen" / f"{keys.ACTION}.memmap").is_file()
    assert not (tmp_path / "default").exists()


def test_storage_bytes_matches_a_hand_count():
    spec = {
        keys.OBSERVATION: ((4,), torch.float32),  # 16
        keys.NEXT_OBSERVATION: ((4,), torch.float32),  # 16
        keys.ACTION: ((), torch.int64),  # 8
        keys.REWARD: ((), torch.float32),  # 4
        keys.TERMINATED: ((), torch.bool),  # 1
        "pixels": ((2, 3), torch.uint8),  # 6
        keys.DISCOUNT: ((), torch.float64),  # 8
    }
    per_item = 16 + 16 + 8 + 4 + 1 + 6 + 8
    assert storage_bytes(ReplayConfig(capacity=10), spec) == 10 * per_item
    assert storage_bytes(ReplayConfig(capacity=1000, storage="memmap"), spec) == 1000 * per_item
    # Prioritized adds float64 tree levels: capacity 10 is one level of 10 leaves,
    # capacity 1000 is 32 nodes above 32 * 32 = 1024 leaves.
    assert storage_bytes(ReplayConfig(capacity=10, prioritized=True), spec) == 10 * per_item + 8 * 10
    assert storage_bytes(ReplayConfig(capacity=1000, prioritized=True), spec) == 1000 * per_item + 8 * (32 + 1024)


@pytest.mark.parametrize("capacity", [1, 10, 1000, 20000])
@pytest.mark.parametrize("prioritized", [False, True])
def test_storage_bytes_equals_what_the_buffer_allocates(capacity, prioritized):
    cfg = ReplayConfig(capacity=capacity, prioritized=prioritized)
    buffer = ReplayBuffer(cfg, SPEC, device=CPU)
    buffer.extend(transitions(0, T=1, N=1))
    allocated = sum(t.numel() * t.element_size() for t in buffer.tensors.values())
    if prioritized:
        allocated += sum(level.numel() * level.element_size() for level in buffer.tree.levels)
    assert storage_bytes(cfg, SPEC) == allocated


HUGE_SPEC = {keys.OBSERVATION: ((1_000_000,), torch.float32)}  # 4 MB a transition


@pytest.mark.parametrize("storage", ["tensor", "memmap"])
def test_check_storage_rejects_a_buffer_larger_than_free_space(storage, tmp_path):
    cfg = ReplayConfig(capacity=2**31 - 1, storage=storage)  # ~8.6 PB
    directory = tmp_path / "replay" if storage == "memmap" else None
    with pytest.raises(ConfigError) as info:
        check_storage(cfg, HUGE_SPEC, CPU, directory, source="run.toml")
    text = info.value.render()
    assert "algo.replay.capacity" in text
    assert "run.toml" in text
    assert re.search(r"needs \d+(\.\d)? (B|KiB|MiB|GiB|TiB)", text), text
    assert "4,000,000 bytes each" in text
    assert ("disk" in text) == (storage == "memmap")
    assert ('storage = "memmap"' in text) == (storage == "tensor")


def test_check_storage_suggests_the_capacity_that_fits(monkeypatch):
    # Pin the free memory so the message's figures are exact.
    monkeypatch.setattr("rlcli.replay.storage.free_bytes", lambda cfg, device, directory: 1000)
    spec = {keys.OBSERVATION: ((3,), torch.float32), keys.TERMINATED: ((), torch.bool)}  # 13 bytes
    with pytest.raises(ConfigError) as info:
        check_storage(ReplayConfig(capacity=100), spec, CPU, None)
    text = info.value.render()
    assert "algo.replay.capacity" in text
    assert "100 transitions needs 1.3 KiB (about 13 bytes each) but only 1000 B of cpu memory" in text
    assert "at most 76" in text  # 1000 // 13
    check_storage(ReplayConfig(capacity=76), spec, CPU, None)  # 988 bytes fit


def test_check_storage_accepts_a_small_buffer_and_creates_its_folder(tmp_path):
    folder = tmp_path / "a" / "b"
    check_storage(ReplayConfig(capacity=100), SPEC, CPU, None)
    check_storage(ReplayConfig(capacity=100, storage="memmap"), SPEC, CPU, folder)
    assert folder.is_dir()
    assert list(folder.iterdir()) == []  # the write probe is cleaned up


def test_check_storage_rejects_an_unwritable_memmap_directory(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")
    cfg = ReplayConfig(capacity=100, storage="memmap", directory=str(blocker / "replay"))
    with pytest.raises(ConfigError) as info:
        check_storage(cfg, SPEC, CPU, blocker / "replay", source="run.toml")
    text = info.value.render()
    assert "algo.replay.directory" in text
    assert str(blocker / "replay") in text
    assert "algo.replay.capacity" not in text


def test_unwritable_directory_is_ignored_for_tensor_storage(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")
    check_storage(ReplayConfig(capacity=100), SPEC, CPU, blocker / "replay")


@pytest.mark.parametrize(
    "field",
    [
        {"alpha": 1.5},
        {"alpha": -0.1},
        {"beta": -0.1},
        {"beta": 1.01},
        {"beta_frames": 0},
        {"priority_eps": 0.0},
        {"priority_eps": -1e-6},
        {"capacity": 0},
        {"alpha": float("nan")},
    ],
)
def test_replay_config_rejects_out_of_range_values(field):
    with pytest.raises(pydantic.ValidationError) as info:
        ReplayConfig(prioritized=True, **field)
    assert next(iter(field)) in str(info.value)


def test_replay_config_accepts_the_range_edges():
    cfg = ReplayConfig(prioritized=True, alpha=0.0, beta=1.0, beta_frames=1, priority_eps=1.0)
    assert (cfg.alpha, cfg.beta, cfg.beta_frames, cfg.priority_eps) == (0.0, 1.0, 1, 1.0)


def prioritized_buffer(capacity: int = 10, **cfg) -> ReplayBuffer:
    return make_buffer(capacity, prioritized=True, **cfg)


def test_prioritized_sample_frequencies_match_priorities_to_the_alpha():
    alpha, eps = 0.6, 1e-6
    buffer = prioritized_buffer(10, alpha=alpha, priority_eps=eps)
    buffer.extend(transitions(0, T=2, N=4))  # 8 of 10 slots
    td_error = torch.tensor([0.1, -2.0, 0.5, 0.0, 4.0, -0.3, 1.0, 0.05])
    buffer.update_priorities(torch.arange(8), td_error)

    generator = torch.Generator().manual_seed(0)
    index = torch.cat([buffer.sample(2000, generator)[keys.INDEX] for _ in range(50)])
    assert int(index.max()) < 8
    frequency = torch.bincount(index, minlength=10).double() / index.numel()
    priority = (td_error.double().abs() + eps) ** alpha
    expected = torch.cat([priority / priority.sum(), torch.zeros(2, dtype=torch.float64)])
    # 100k draws: the binomial standard deviation is at most 0.0016.
    assert float((frequency - expected).abs().max()) < 0.006, (frequency, expected)
    # And the ordering of the priorities shows: index 4 (|td| 4) most often, index 3 (|td| 0) least.
    assert int(frequency[:8].argmax()) == 4 and int(frequency[:8].argmin()) == 3


def test_alpha_zero_samples_uniformly():
    buffer = prioritized_buffer(10, alpha=0.0)
    buffer.extend(transitions(0, T=1, N=5))
    buffer.update_priorities(torch.arange(5), torch.tensor([0.0, 1.0, 10.0, 100.0, 1000.0]))
    assert torch.equal(buffer.tree.leaves[:5], torch.ones(5, dtype=torch.float64))
    sample = buffer.sample(64, torch.Generator().manual_seed(0))
    assert torch.equal(sample[keys.WEIGHT], torch.ones(64))


def test_importance_weights_match_a_brute_force_computation():
    cfg = dict(alpha=0.7, beta=0.4, beta_frames=50, priority_eps=1e-3)
    buffer = prioritized_buffer(16, **cfg)
    buffer.extend(transitions(0, T=3, N=4))  # 12 of 16 slots
    generator = torch.Generator().manual_seed(5)
    td_error = torch.randn(6, generator=generator) * 3
    updated = torch.tensor([0, 2, 3, 7, 9, 11])
    buffer.update_priorities(updated, td_error)

    priority = torch.ones(12, dtype=torch.float64)  # new transitions entered at max_priority 1
    priority[updated] = (td_error.double().abs() + cfg["priority_eps"]) ** cfg["alpha"]
    beta = cfg["beta"] + (1 - cfg["beta"]) * 12 / cfg["beta_frames"]
    assert buffer.beta() == pytest.approx(beta)

    sample = buffer.sample(64, generator)
    index = sample[keys.INDEX]
    assert int(index.max()) < 12
    probability = priority[index] / priority.sum()
    weight = (12 * probability) ** -beta
    weight = weight / weight.max()
    assert sample[keys.WEIGHT].dtype == torch.float32
    assert sample[keys.WEIGHT].shape == torch.Size([64])
    torch.testing.assert_close(sample[keys.WEIGHT], weight.float(), rtol=1e-6, atol=1e-7)
    assert float(sample[keys.WEIGHT].max()) == 1.0
    # The rows still match the stored transitions at the sampled index.
    assert torch.equal(sample[keys.ACTION], index)


def test_update_priorities_sets_leaves_and_raises_max_priority():
    alpha, eps = 0.6, 1e-6
    buffer = prioritized_buffer(10, alpha=alpha, priority_eps=eps)
    buffer.extend(transitions(0, T=1, N=6))
    assert torch.equal(buffer.tree.leaves[:6], torch.ones(6, dtype=torch.float64))
    assert float(buffer.tree.leaves[6:].abs().sum()) == 0.0
    assert buffer.max_priority == 1.0

    buffer.update_priorities(torch.tensor([1, 3, 5]), torch.tensor([0.5, -2.0, 0.0]))
    expected = (torch.tensor([0.5, 2.0, 0.0], dtype=torch.float64) + eps) ** alpha
    torch.testing.assert_close(buffer.tree.leaves[[1, 3, 5]], expected, rtol=1e-12, atol=0)
    assert buffer.tree.leaves[[0, 2, 4]].tolist() == [1.0, 1.0, 1.0]
    assert buffer.max_priority == pytest.approx(float(expected[1]))
    torch.testing.assert_close(buffer.tree.total(), buffer.tree.leaves.sum(), rtol=1e-12, atol=0)

    # A smaller error does not lower the maximum.
    buffer.update_priorities(torch.tensor([3]), torch.tensor([0.1]))
    assert buffer.max_priority == pytest.approx(float(expected[1]))
    assert float(buffer.tree.leaves[3]) == pytest.approx((0.1 + eps) ** alpha)

    # New transitions (wrapping onto slot 0) enter at the maximum priority.
    buffer.extend(transitions(6, T=1, N=5))
    torch.testing.assert_close(
        buffer.tree.leaves[[6, 7, 8, 9, 0]], torch.full((5,), float(expected[1]), dtype=torch.float64)
    )
    assert float(buffer.tree.leaves[3]) == pytest.approx((0.1 + eps) ** alpha)


def test_update_priorities_accepts_a_tensor_that_requires_grad():
    buffer = prioritized_buffer(10)
    buffer.extend(transitions(0, T=1, N=4))
    td_error = torch.tensor([3.0, 1.0], requires_grad=True)
    buffer.update_priorities(torch.tensor([0, 1]), td_error * 2)
    assert buffer.max_priority == pytest.approx((6.0 + 1e-6) ** 0.6)


def test_update_priorities_is_a_no_op_without_prioritization():
    buffer = make_buffer(10)
    buffer.extend(transitions(0, T=1, N=4))
    buffer.update_priorities(torch.tensor([0, 1]), torch.tensor([5.0, 5.0]))
    assert buffer.tree is None and buffer.max_priority == 1.0


def test_beta_anneals_to_one_over_beta_frames():
    buffer = prioritized_buffer(1000, beta=0.4, beta_frames=100)
    assert buffer.beta() == pytest.approx(0.4)
    buffer.extend(transitions(0, T=5, N=5))  # 25 frames
    assert buffer.beta() == pytest.approx(0.4 + 0.6 * 0.25)
    buffer.extend(transitions(25, T=5, N=10))  # 75
    assert buffer.beta() == pytest.approx(0.4 + 0.6 * 0.75)
    buffer.extend(transitions(75, T=5, N=5))  # 100
    assert buffer.beta() == pytest.approx(1.0)
    buffer.extend(transitions(100, T=10, N=10))  # 200: stays at 1
    assert buffer.beta() == 1.0


def test_beta_counts_frames_added_not_frames_kept():
    buffer = prioritized_buffer(10, beta=0.0, beta_frames=40)
    buffer.extend(transitions(0, T=4, N=5))  # 20 frames, only 10 kept
    assert len(buffer) == 10
    assert buffer.beta() == pytest.approx(0.5)


def test_state_dict_round_trips_the_counters():
    buffer = prioritized_buffer(10)
    buffer.extend(transitions(0, T=3, N=4))
    buffer.update_priorities(torch.tensor([0]), torch.tensor([9.0]))
    state = buffer.state_dict(storage=False)
    assert state == {"cursor": 0, "size": 10, "added": 12, "max_priority": buffer.max_priority, "storage": None}
    # Without its transitions a buffer restarts empty, keeping its counts for the beta schedule.
    other = prioritized_buffer(10)
    other.load_state_dict(state)
    assert (other.cursor, other.size, other.added, other.max_priority) == (0, 0, 12, buffer.max_priority)
    assert other.beta() == buffer.beta()
    # With them, sampling continues as it would have: same transitions, priorities and weights.
    full = prioritized_buffer(10)
    full.load_state_dict(buffer.state_dict())
    assert (full.cursor, full.size) == (0, 10)
    a, b = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    assert (buffer.sample(6, a) == full.sample(6, b)).all()
