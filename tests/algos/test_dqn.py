"""DQN: its loss against hand-computed values, n-step transitions, exploration and update schedules."""

import copy

import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.algos.dqn import QAgent, dqn_loss
from rlcli.models.normalization import ObservationNormalizer
from rlcli.timing import Timer


def tiny_agent() -> QAgent:
    """Q(s) = [s, 2s] online and [3s, -s] target, for one-dimensional s."""
    q = nn.Linear(1, 2, bias=False)
    agent = QAgent(ObservationNormalizer((1,), enabled=False, clip=10.0), q, num_actions=2, epsilon_end=0.0)
    with torch.no_grad():
        q.weight.copy_(torch.tensor([[1.0], [2.0]]))
        agent.target.weight.copy_(torch.tensor([[3.0], [-1.0]]))
    return agent


def tiny_batch(**extra) -> TensorDict:
    data = {
        keys.INPUT: torch.tensor([[1.0], [2.0], [1.0]]),
        keys.ACTION: torch.tensor([0, 1, 1]),
        keys.REWARD: torch.tensor([1.0, 0.5, -1.0]),
        keys.NEXT_INPUT: torch.tensor([[2.0], [-1.0], [4.0]]),
        # The second transition was truncated by the clock: it still bootstraps.
        keys.TERMINATED: torch.tensor([False, False, True]),
        keys.TRUNCATED: torch.tensor([False, True, False]),
    }
    return TensorDict({**data, **extra}, batch_size=[3])


def test_double_dqn_target_uses_the_online_argmax_and_the_target_value():
    agent = tiny_agent()
    terms = dqn_loss(agent, tiny_batch(), gamma=0.5, double=True, huber=False)
    # Q(s, a): s=1,a=0 -> 1; s=2,a=1 -> 4; s=1,a=1 -> 2.
    # Online argmax at s' = 2 is a=1 (4 > 2): target value -2. At s' = -1 it is a=0 (-1 > -2): target -3.
    targets = torch.tensor([1.0 + 0.5 * -2.0, 0.5 + 0.5 * -3.0, -1.0])
    td = torch.tensor([1.0, 4.0, 2.0]) - targets
    torch.testing.assert_close(terms["td_error"], td)
    torch.testing.assert_close(terms["loss/q"], td.square().mean())
    torch.testing.assert_close(terms["stats/q_mean"], torch.tensor(7.0 / 3))


def test_plain_dqn_target_takes_the_target_networks_max():
    agent = tiny_agent()
    terms = dqn_loss(agent, tiny_batch(), gamma=0.5, double=False, huber=False)
    # max over the target's [3s', -s']: s'=2 -> 6, s'=-1 -> 1.
    targets = torch.tensor([1.0 + 0.5 * 6.0, 0.5 + 0.5 * 1.0, -1.0])
    torch.testing.assert_close(terms["td_error"], torch.tensor([1.0, 4.0, 2.0]) - targets)


def test_huber_loss_is_quadratic_inside_one_and_linear_outside():
    agent = tiny_agent()
    terms = dqn_loss(agent, tiny_batch(), gamma=0.5, double=False, huber=True)
    td = terms["td_error"]
    expected = torch.where(td.abs() < 1, 0.5 * td.square(), td.abs() - 0.5).mean()
    torch.testing.assert_close(terms["loss/q"], expected)


def test_n_step_discount_key_and_importance_weights_enter_the_loss():
    agent = tiny_agent()
    weight = torch.tensor([1.0, 0.5, 0.25])
    batch = tiny_batch(**{keys.DISCOUNT: torch.tensor([0.125, 0.25, 0.5]), keys.WEIGHT: weight})
    terms = dqn_loss(agent, batch, gamma=0.5, double=False, huber=False)
    targets = torch.tensor([1.0 + 0.125 * 6.0, 0.5 + 0.25 * 1.0, -1.0])
    td = torch.tensor([1.0, 4.0, 2.0]) - targets
    torch.testing.assert_close(terms["td_error"], td)
    torch.testing.assert_close(terms["loss/q"], (weight * td.square()).mean())


def test_gradient_flows_only_into_the_online_network():
    agent = tiny_agent()
    dqn_loss(agent, tiny_batch(), gamma=0.5, double=True, huber=True)["loss/q"].backward()
    assert agent.q.weight.grad is not None and agent.q.weight.grad.abs().sum() > 0
    assert agent.target.weight.grad is None


def test_epsilon_is_one_in_warm_up_then_decays_linearly_to_its_end(cartpole_dqn):
    run = cartpole_dqn(learning_starts=64, exploration_fraction=0.1, epsilon_start=1.0, epsilon_end=0.1)
    try:
        timer = Timer(run.device)
        seen = []
        for _ in range(14):
            stats = run.algo.learn(run.source.next_batch(timer), timer)
            seen.append(round(stats["stats/epsilon"], 6))
        final = run.algo.exploration.epsilon
    finally:
        run.close()
    # Each row reports the epsilon its batch was collected with: 32 frames per batch,
    # warm-up until 64 frames, then 1 - 0.9 * frames / 320 down to 0.1.
    assert seen[:2] == [1.0, 1.0]
    assert seen[2] == pytest.approx(1 - 0.9 * 64 / 320)
    assert seen[3] == pytest.approx(1 - 0.9 * 96 / 320)
    assert seen[10] == pytest.approx(0.1)
    assert final == pytest.approx(0.1)


def test_target_network_is_copied_every_interval_gradient_steps(cartpole_dqn):
    run = cartpole_dqn(utd_ratio=0.25, learning_starts=0, target_update_interval=16)
    try:
        timer = Timer(run.device)
        agent = run.algo.agent
        initial = copy.deepcopy(agent.target.state_dict())
        run.algo.learn(run.source.next_batch(timer), timer)  # 8 steps: no copy yet
        assert all(torch.equal(initial[k], v) for k, v in agent.target.state_dict().items())
        run.algo.learn(run.source.next_batch(timer), timer)  # 16 steps: copied at the last one
        assert all(torch.equal(agent.q.state_dict()[k], v) for k, v in agent.target.state_dict().items())
        run.algo.learn(run.source.next_batch(timer), timer)  # 24: online moved on, target stays
        assert not all(torch.equal(agent.q.state_dict()[k], v) for k, v in agent.target.state_dict().items())
    finally:
        run.close()


def test_prioritized_replay_updates_priorities_from_td_errors(cartpole_dqn):
    run = cartpole_dqn(learning_starts=0, replay={"capacity": 10_000, "prioritized": True})
    try:
        timer = Timer(run.device)
        for _ in range(3):
            terms = run.algo.learn(run.source.next_batch(timer), timer)
        leaves = run.algo.replay.buffer.tree.leaves[: len(run.algo.replay.buffer)]
    finally:
        run.close()
    assert "update.priority" in timer.current and terms["stats/gradient_steps"] > 0
    # New transitions enter at priority 1; sampled ones now carry (|td| + eps)^alpha.
    assert (leaves != 1.0).any() and (leaves > 0).all()


def test_warm_up_acts_uniformly_and_learns_nothing(cartpole_dqn):
    run = cartpole_dqn(learning_starts=3200)
    try:
        timer = Timer(run.device)
        before = [p.clone() for p in run.algo.agent.q.parameters()]
        actions = []
        for _ in range(4):
            batch = run.source.next_batch(timer)
            actions.append(batch[keys.ACTION].clone())
            stats = run.algo.learn(batch, timer)
        assert stats["stats/gradient_steps"] == 0 and "loss/q" not in stats
        assert all(torch.equal(a, b) for a, b in zip(before, run.algo.agent.q.parameters()))
        assert len(run.algo.replay.buffer) > 100
    finally:
        run.close()
    share = torch.cat(actions).float().mean()
    assert 0.4 < share < 0.6


# Action masks: the next state's mask bounds the target's max and the double-DQN argmax.


def test_masked_targets_range_over_the_next_states_allowed_actions_only():
    agent = tiny_agent()
    # Only a=1 at s'=2, only a=0 at s'=-1; the terminal third allows nothing (its target drops the bootstrap).
    mask = torch.tensor([[False, True], [True, False], [False, False]])
    plain = dqn_loss(agent, tiny_batch(**{keys.NEXT_ACTION_MASK: mask}), gamma=0.5, double=False, huber=False)
    # Target values [3s', -s']: at s'=2 only a=1 -> -2; at s'=-1 only a=0 -> -3.
    targets = torch.tensor([1.0 + 0.5 * -2.0, 0.5 + 0.5 * -3.0, -1.0])
    torch.testing.assert_close(plain["td_error"], torch.tensor([1.0, 4.0, 2.0]) - targets)
    # Double: the online argmax among allowed actions is the only one allowed; the target values it.
    double = dqn_loss(agent, tiny_batch(**{keys.NEXT_ACTION_MASK: mask}), gamma=0.5, double=True, huber=False)
    torch.testing.assert_close(double["td_error"], torch.tensor([1.0, 4.0, 2.0]) - targets)
    assert torch.isfinite(plain["loss/q"]) and torch.isfinite(double["loss/q"])


def test_masked_double_dqn_target_against_a_loop_on_random_data():
    g = torch.Generator().manual_seed(0)
    q, target = nn.Linear(3, 5), nn.Linear(3, 5)
    agent = QAgent(ObservationNormalizer((3,), enabled=False, clip=10.0), q, num_actions=5, epsilon_end=0.0)
    agent.target.load_state_dict(target.state_dict())
    rows = 32
    mask = torch.rand(rows, 5, generator=g) < 0.5
    mask[:, 0] |= ~mask.any(1)
    batch = TensorDict(
        {
            keys.INPUT: torch.randn(rows, 3, generator=g),
            keys.ACTION: torch.randint(5, (rows,), generator=g),
            keys.REWARD: torch.randn(rows, generator=g),
            keys.NEXT_INPUT: torch.randn(rows, 3, generator=g),
            keys.TERMINATED: torch.rand(rows, generator=g) < 0.2,
            keys.DISCOUNT: torch.full((rows,), 0.9**3),
            keys.NEXT_ACTION_MASK: mask,
        },
        batch_size=[rows],
    )
    for double in (False, True):
        terms = dqn_loss(agent, batch, gamma=0.9, double=double, huber=False)
        with torch.no_grad():
            expected = []
            for i in range(rows):
                online, values = q(batch[keys.NEXT_INPUT][i]), target(batch[keys.NEXT_INPUT][i])
                allowed = [a for a in range(5) if mask[i, a]]
                best = max(allowed, key=lambda a: online[a]) if double else max(allowed, key=lambda a: values[a])
                bootstrap = 0.0 if batch[keys.TERMINATED][i] else 0.9**3 * values[best]
                expected.append(q(batch[keys.INPUT][i])[batch[keys.ACTION][i]] - (batch[keys.REWARD][i] + bootstrap))
        torch.testing.assert_close(terms["td_error"], torch.stack(expected))


def test_acting_and_evaluating_take_only_allowed_actions():
    from rlcli.carry import Carry

    agent = tiny_agent()
    carry = Carry(64, "cpu")
    # Greedy would be a=1 for every positive s; only a=0 is allowed in the even rows.
    carry.mask = torch.ones(64, 2, dtype=torch.bool)
    carry.mask[::2, 1] = False
    obs = torch.rand(64, 1) + 0.5
    greedy = agent.actions(obs, deterministic=True, generator=torch.Generator(), carry=carry)
    assert (greedy[::2] == 0).all() and (greedy[1::2] == 1).all()
    agent.epsilon_end = 1.0
    for seed in range(5):
        sampled = agent.actions(obs, deterministic=False, generator=torch.Generator().manual_seed(seed), carry=carry)
        assert (sampled[::2] == 0).all()
