"""The replay fed from collected batches: n-step windows across batches, the update-to-data
schedule, priorities, and what a sample holds."""

import pytest
import torch

from rlcli import keys
from rlcli.learning.advantages import n_step_returns
from rlcli.timing import Timer


def test_n_step_transitions_across_batches_match_the_whole_stream(cartpole_dqn):
    run = cartpole_dqn(n_step=3, gamma=0.9)
    try:
        timer = Timer(run.device)
        batches = [run.source.next_batch(timer).clone() for _ in range(3)]
        emitted = [run.algo.replay.transitions(b) for b in batches]
    finally:
        run.close()
    stream = torch.cat(batches, 0)
    # The first two batches are complete in the stream; each emitted window starts
    # two steps before its batch's rows (the carried steps).
    reward, term, trunc = stream[keys.REWARD], stream[keys.TERMINATED], stream[keys.TRUNCATED]
    # n_step_returns over the whole stream (checked against a plain loop in test_advantages.py).
    returns, last, discount = n_step_returns(reward, term, trunc, gamma=0.9, n=3, starts=stream.batch_size[0] - 2)
    joined = torch.cat(emitted[1:], 0)
    # emitted[1] starts at stream step 8 - 2 = 6.
    rows = slice(6, 6 + joined.batch_size[0])
    valid = joined[keys.VALID]
    assert torch.equal(valid, stream[keys.VALID][rows])
    torch.testing.assert_close(joined[keys.REWARD][valid], returns[rows][valid])
    torch.testing.assert_close(joined[keys.DISCOUNT][valid], discount[rows][valid])
    expected_next = stream[keys.NEXT_OBSERVATION].gather(0, last[rows].unsqueeze(-1).expand(-1, -1, 4))
    torch.testing.assert_close(joined[keys.NEXT_OBSERVATION][valid], expected_next[valid])
    assert torch.equal(joined[keys.TERMINATED][valid], term.gather(0, last[rows])[valid])
    # The placeholder steps before the first batch are never emitted.
    assert not emitted[0][keys.VALID][:2].any()


def test_gradient_steps_follow_the_update_to_data_ratio(cartpole_dqn):
    run = cartpole_dqn(utd_ratio=0.3, learning_starts=0)
    try:
        timer = Timer(run.device)
        steps = [run.algo.learn(run.source.next_batch(timer), timer)["stats/gradient_steps"] for _ in range(10)]
    finally:
        run.close()
    # 32 frames * 0.3 = 9.6 steps per batch: the fractions carry, never lost.
    assert set(steps) == {9.0, 10.0}
    assert sum(steps) == 96


def test_no_gradient_step_is_due_during_the_warm_up_and_none_is_owed_for_it(cartpole_dqn):
    run = cartpole_dqn(utd_ratio=0.5, learning_starts=64)
    try:
        timer = Timer(run.device)
        replay = run.algo.replay
        for expected_learning in (False, True, True):
            replay.observe(run.source.next_batch(timer))
            assert replay.learning == expected_learning
        # 96 frames in, the last 32 after the warm-up: only those pay, 0.5 each.
        assert replay.due(32) == 16 and replay.owed == 0.0
    finally:
        run.close()


@pytest.mark.parametrize("prioritized", [False, True])
def test_prioritize_sets_priorities_of_a_prioritized_buffer_only(prioritized, cartpole_dqn):
    run = cartpole_dqn(learning_starts=0, replay={"capacity": 10_000, "prioritized": prioritized})
    try:
        timer = Timer(run.device)
        replay = run.algo.replay
        sample = run.algo.learner.ingest_and_sample(run.source.next_batch(timer), 8, torch.Generator().manual_seed(0))
        replay.prioritize(sample, torch.full((8,), 3.0), timer)
        tree = replay.buffer.tree
    finally:
        run.close()
    if not prioritized:
        assert tree is None and "update.priority" not in timer.current
        return
    cfg = replay.buffer.cfg
    expected = (3.0 + cfg.priority_eps) ** cfg.alpha
    torch.testing.assert_close(tree.leaves[sample[keys.INDEX]], torch.full((8,), expected, dtype=torch.float64))
    assert "update.priority" in timer.current


def test_a_sample_is_normalized_by_the_current_statistics_while_the_buffer_keeps_raw_data(cartpole_dqn):
    run = cartpole_dqn(learning_starts=0)
    try:
        timer = Timer(run.device)
        replay = run.algo.replay
        replay.obs_norm.enabled = True
        sample = run.algo.learner.ingest_and_sample(run.source.next_batch(timer), 16, torch.Generator().manual_seed(1))
        raw = replay.buffer.tensors[keys.OBSERVATION][sample[keys.INDEX]]
    finally:
        run.close()
    assert torch.equal(sample[keys.OBSERVATION], raw)
    torch.testing.assert_close(sample[keys.INPUT], replay.obs_norm(raw))
    assert not torch.equal(sample[keys.INPUT], raw)
