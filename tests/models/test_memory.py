"""Memory cores (models/memory.py) and the recurrent actor-critic: the sequence run equals a plain step
loop with resets, a collected rollout re-runs to the log-probabilities and values it was collected
with, the state is zeroed where an episode starts in both autoreset modes, and the rollout is cut into
sequences in order."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.carry import Carry
from rlcli.config.load import validate_data
from rlcli.learning.on_policy import sequences
from rlcli.models.memory import MemoryCore, unroll
from rlcli.run import build_run
from rlcli.timing import Timer


def plain_loop(rnn: nn.RNNBase, x, first, h, c=None):
    """The recurrence one step at a time, the state zeroed before each step that starts an episode."""
    outs = []
    for t in range(x.shape[0]):
        keep = (~first[t]).float().view(1, -1, 1)
        h = h * keep
        if c is None:
            out, h = rnn(x[t : t + 1], h)
        else:
            c = c * keep
            out, (h, c) = rnn(x[t : t + 1], (h, c))
        outs.append(out)
    return torch.cat(outs), h, c


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("starts", [0.02, 0.3], ids=["few-starts-cut", "many-starts-side-by-side"])
def test_unroll_equals_a_step_loop_that_resets_where_episodes_start(kind, starts):
    torch.manual_seed(0)
    rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(5, 7, num_layers=2)
    x = torch.randn(12, 6, 5, requires_grad=True)
    first = torch.rand(12, 6) < starts
    first[0, 2] = True
    parts = 2 if kind == "lstm" else 1
    state = torch.randn(6, parts * 2, 7)
    out, _ = unroll(rnn, x, first, state)
    h0 = state[:, :2].transpose(0, 1)
    c0 = state[:, 2:].transpose(0, 1) if kind == "lstm" else None
    want, _, _ = plain_loop(rnn, x, first, h0, c0)
    torch.testing.assert_close(out, want)
    # The gradients too: the side-by-side pieces' padding takes no part in them.
    weights = torch.randn_like(out)
    (grad,) = torch.autograd.grad((out * weights).sum(), x)
    (want_grad,) = torch.autograd.grad((want * weights).sum(), x)
    torch.testing.assert_close(grad, want_grad)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_acting_one_step_at_a_time_equals_the_sequence_run(kind):
    # Acting takes torch's fused cells one step at a time; the update, the sequence kernel.
    torch.manual_seed(2)
    rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(5, 7, num_layers=2)
    x, first = torch.randn(9, 3, 5), torch.rand(9, 3) < 0.3
    state = torch.randn(3, (2 if kind == "lstm" else 1) * 2, 7)
    whole, _ = unroll(rnn, x, first, state)
    steps, carried = [], state
    for t in range(9):
        out, carried = unroll(rnn, x[t : t + 1], first[t : t + 1], carried)
        steps.append(out)
    torch.testing.assert_close(torch.cat(steps), whole, atol=1e-6, rtol=0)
    # The state carried after the last step is the plain loop's.
    h0 = state[:, :2].transpose(0, 1)
    c0 = state[:, 2:].transpose(0, 1) if kind == "lstm" else None
    _, h, c = plain_loop(rnn, x, first, h0, c0)
    torch.testing.assert_close(carried[:, :2], h.transpose(0, 1), atol=1e-6, rtol=0)
    if kind == "lstm":
        torch.testing.assert_close(carried[:, 2:], c.transpose(0, 1), atol=1e-6, rtol=0)


def test_a_step_that_starts_an_episode_forgets_everything_before_it():
    torch.manual_seed(1)
    core = MemoryCore("lstm", (3, 3), size=4, layers=1)
    x = torch.randn(5, 2, 3)
    first = torch.zeros(5, 2, dtype=torch.bool)
    first[3, 0] = True
    one, _, _ = core(x, x, first, torch.randn(2, 2, 2, 4))
    # Other inputs and another starting state before the reset: env 0 from step 3 on is unchanged.
    other = x.clone()
    other[:3] = torch.randn(3, 2, 3)
    two, _, _ = core(other, other, first, torch.randn(2, 2, 2, 4))
    torch.testing.assert_close(one[3:, 0], two[3:, 0])
    assert not torch.allclose(one[3:, 1], two[3:, 1])


def test_a_shared_core_gives_the_value_the_policys_features():
    core = MemoryCore("gru", (3,), size=4, layers=1)
    x = torch.randn(4, 2, 3)
    first = torch.zeros(1, 2, dtype=torch.bool)
    policy, value, state = core(x[:1], x[:1], first, core.initial(2, torch.device("cpu")))
    assert value is policy and state.shape == (2, 1, 1, 4)


def test_sequences_cut_each_envs_rollout_in_order():
    rows = TensorDict({"t": torch.arange(8).view(8, 1).expand(8, 3) * 10 + torch.arange(3)}, batch_size=[8, 3])
    cut = sequences(rows, 4)
    assert cut.batch_size == (4, 6)
    # Column k: env k % 3, steps 4 * (k // 3) onwards.
    for k in range(6):
        env, start = k % 3, 4 * (k // 3)
        assert cut["t"][:, k].tolist() == [10 * t + env for t in range(start, start + 4)]


def recurrent_run(tmp_path, vectorization: str, kind: str = "lstm", env_id: str = "CartPoleNoVel-v1", **algo):
    cfg = validate_data(
        {
            "run": {"seed": 3, "device": "cpu", "output_dir": str(tmp_path)},
            "env": {"id": env_id, "num_envs": 4, "vectorization": vectorization},
            "network": {"hidden_sizes": [16], "memory": kind, "memory_size": 8},
            "algo": {"name": "ppo", "minibatch_size": 64, "epochs": 1, **algo},
            "collector": {"frames_per_batch": 128, "total_frames": 512},
            "checkpoint": {"every_frames": 0},
            "timing": {"enabled": False},
        }
    )
    return build_run(cfg)


# Both autoreset modes: SAME_STEP (sync) and NEXT_STEP (CartPole's own vector env).
@pytest.mark.parametrize(
    ("env_id", "vectorization"), [("CartPoleNoVel-v1", "sync"), ("CartPole-v1", "vector_entry_point")]
)
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_the_update_re_runs_a_rollout_to_the_log_probs_and_values_it_was_collected_with(
    tmp_path, env_id, vectorization, kind
):
    run = recurrent_run(tmp_path, vectorization, kind, env_id)
    try:
        timer = Timer(run.device)
        batch = run.source.next_batch(timer)
        rows = run.algo.rollout.rows(batch, timer)
        # 32 steps per env, minibatches of 64 rows: sequences of 32 steps, one column per env.
        assert rows.batch_size == (32, 4)
        log_prob, _, value = run.algo.agent.evaluate(
            rows[keys.INPUT], rows[keys.ACTION], memory=rows[keys.MEMORY], first=rows[keys.FIRST]
        )
        torch.testing.assert_close(log_prob, rows[keys.LOG_PROB], atol=1e-5, rtol=0)
        torch.testing.assert_close(value, rows[keys.VALUE], atol=1e-5, rtol=0)
    finally:
        run.close()


def test_episode_starts_follow_the_envs_ends_and_the_memory_restarts_from_zero(tmp_path):
    run = recurrent_run(tmp_path, "sync")
    try:
        batch = run.source.next_batch(Timer(run.device))
        ended = batch[keys.TERMINATED] | batch[keys.TRUNCATED]
        assert ended.any(), "no episode ended in 32 steps of a random CartPole policy"
        # The first step of the run starts every episode; after that, a step starts one where the last ended.
        assert batch[keys.FIRST][0].all()
        assert torch.equal(batch[keys.FIRST][1:], ended[:-1])
        # What the agent acted from is the state after the previous step: never zeroed by the collector.
        assert batch[keys.MEMORY][1:][ended[:-1]].abs().sum() > 0
    finally:
        run.close()


def test_next_step_envs_reset_the_memory_after_the_reset_step(tmp_path):
    # CartPole's own vector env resets in the step after an episode ends (NEXT_STEP).
    run = recurrent_run(tmp_path, "vector_entry_point", env_id="CartPole-v1")
    try:
        batch = run.source.next_batch(Timer(run.device))
        valid, ended = batch[keys.VALID], batch[keys.TERMINATED] | batch[keys.TRUNCATED]
        assert not valid.all(), "no NEXT_STEP reset step in the rollout"
        # The step after an episode end is the reset step, and the step after it starts the episode.
        assert torch.equal(batch[keys.FIRST][1:], (ended | ~valid)[:-1])
    finally:
        run.close()


def test_acting_without_a_carry_starts_from_fresh_memory(tmp_path):
    run = recurrent_run(tmp_path, "sync")
    try:
        agent = run.algo.agent
        obs = torch.randn(3, 4)
        fresh = Carry.of(agent, 3, "cpu")
        with_carry = agent.actions(obs, deterministic=True, generator=torch.Generator(), carry=fresh)
        without = agent.actions(obs, deterministic=True, generator=torch.Generator())
        assert torch.equal(with_carry, without)
        assert fresh.memory.abs().sum() > 0, "acting did not move the carry's memory on"
    finally:
        run.close()
