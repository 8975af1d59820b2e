import pytest
import torch

from rlcli import keys
from rlcli.algos.reinforce import reinforce_loss
from rlcli.config.errors import ConfigError
from rlcli.config.load import validate_data
from rlcli.run import build_run
from rlcli.timing import Timer

GAMMA = 0.9


def reinforce_run(**algo):
    """REINFORCE on 4 CartPole envs whose episodes are cut at 20 steps, 32-step batches: every batch
    holds terminations, truncations and episodes it cuts. Rewards unscaled."""
    return build_run(
        validate_data(
            {
                "run": {"seed": 5, "device": "cpu"},
                "env": {
                    "id": "CartPole-v1",
                    "num_envs": 4,
                    "vectorization": "vector_entry_point",
                    "max_episode_steps": 20,
                    "normalize_reward": False,
                },
                "algo": {"name": "reinforce", "gamma": GAMMA, **algo},
                "collector": {"frames_per_batch": 128, "total_frames": 1280},
                "timing": {"enabled": False},
            }
        )
    )


def collected_rows(run):
    """A batch collected by ``run``, a copy of its ``valid`` before ``learn``'s rows, and those rows."""
    timer = Timer(run.device)
    batch = run.source.next_batch(timer)
    valid_before = batch[keys.VALID].clone()
    rows = run.algo.rollout.rows(batch, timer)
    return batch, valid_before, rows


def returns_loop(batch, *, bootstrap: bool):
    """Discounted returns and the rows the loss counts, walking each env's steps from the back.

    A termination ends the return with its reward. With ``bootstrap`` a truncation and the batch's
    last step add gamma times the critic's value of the next observation and every valid step
    counts; without it they add nothing, and the steps after an env's last episode end do not count.
    """
    reward, done = batch[keys.REWARD], batch[keys.TERMINATED] | batch[keys.TRUNCATED]
    steps, envs = reward.shape
    returns = torch.zeros(steps, envs, dtype=torch.float64)
    counted = batch[keys.VALID].clone()
    for e in range(envs):
        later, ended = 0.0, False
        for t in reversed(range(steps)):
            ended = ended or bool(done[t, e])
            cut_here = bool(batch[keys.TRUNCATED][t, e]) or t == steps - 1
            if batch[keys.TERMINATED][t, e]:
                later = float(reward[t, e])
            elif cut_here:
                value = float(batch[keys.NEXT_VALUE][t, e]) if bootstrap else 0.0
                later = float(reward[t, e]) + GAMMA * value
            else:
                later = float(reward[t, e]) + GAMMA * later
            returns[t, e] = later
            if not bootstrap and not ended:
                counted[t, e] = False
    return returns, counted


def test_without_a_baseline_the_steps_of_episodes_the_batch_cuts_are_dropped():
    run = reinforce_run(baseline=False)
    try:
        batch, valid_before, rows = collected_rows(run)
    finally:
        run.close()
    assert bool(batch[keys.TERMINATED].any()) and bool(batch[keys.TRUNCATED].any())
    expected, counted = returns_loop(batch, bootstrap=False)
    assert keys.NEXT_VALUE not in batch.keys()
    assert torch.equal(rows[keys.VALID], counted.reshape(-1))
    # Some valid steps are dropped, and the batch's own valid is left for the statistics.
    assert int(counted.sum()) < int(valid_before.sum())
    assert torch.equal(batch[keys.VALID], valid_before)
    kept = rows[keys.VALID]
    torch.testing.assert_close(rows[keys.VALUE_TARGET][kept].double(), expected.reshape(-1)[kept], rtol=1e-5, atol=1e-4)
    # No critic: the advantage is the return itself.
    assert torch.equal(rows[keys.ADVANTAGE], rows[keys.VALUE_TARGET])


def test_with_a_baseline_cut_episodes_bootstrap_from_the_critic_and_every_valid_step_counts():
    run = reinforce_run(baseline=True)
    try:
        batch, valid_before, rows = collected_rows(run)
    finally:
        run.close()
    expected, counted = returns_loop(batch, bootstrap=True)
    assert torch.equal(counted, valid_before) and torch.equal(rows[keys.VALID], valid_before.reshape(-1))
    torch.testing.assert_close(rows[keys.VALUE_TARGET].double(), expected.reshape(-1), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(rows[keys.ADVANTAGE], (rows[keys.VALUE_TARGET] - batch[keys.VALUE].reshape(-1)))
    # The batch's last steps carry the critic's value: their targets are not the bare rewards.
    last = batch[keys.REWARD][-1] + GAMMA * batch[keys.NEXT_VALUE][-1] * ~batch[keys.TERMINATED][-1]
    torch.testing.assert_close(rows[keys.VALUE_TARGET].view(batch.batch_size)[-1], last)


@pytest.mark.parametrize("baseline", [True, False])
def test_loss_keys_and_only_a_baseline_trains_the_value_head(baseline):
    run = reinforce_run(baseline=baseline)
    try:
        _, _, rows = collected_rows(run)
        terms = run.algo.loss(rows)
    finally:
        run.close()
    expected = {"loss/policy", "loss/entropy", "loss/total"} | ({"loss/value"} if baseline else set())
    assert set(terms) == expected
    terms["loss/total"].backward()
    agent = run.algo.agent
    policy_grads = [p.grad for p in agent.policy.parameters()]
    value_grads = [p.grad for p in agent.value.parameters()]
    assert all(g is not None for g in policy_grads) and any(bool(g.abs().sum() > 0) for g in policy_grads)
    if baseline:
        assert any(g is not None and bool(g.abs().sum() > 0) for g in value_grads)
    else:
        assert all(g is None for g in value_grads)


def test_reinforce_loss_is_the_score_function_estimator_over_the_counted_rows():
    run = reinforce_run(baseline=False, normalize_advantage=False)
    try:
        _, _, rows = collected_rows(run)
    finally:
        run.close()
    terms = reinforce_loss(run.algo.agent, rows, baseline=False, normalize_advantage=False)
    kept = rows[rows[keys.VALID]]
    log_prob, _, _ = run.algo.agent.evaluate(kept[keys.INPUT], kept[keys.ACTION])
    torch.testing.assert_close(terms["loss/policy"], -(log_prob * kept[keys.ADVANTAGE]).mean())


def test_a_target_other_than_monte_carlo_without_a_baseline_is_a_config_error():
    with pytest.raises(ConfigError) as info:
        reinforce_run(baseline=False, value_target="gae")
    text = info.value.render()
    assert "algo.value_target" in text and "td1" in text and "baseline" in text
