"""What PPO, A2C and REINFORCE share: the rollout made ready for the loss, its rows, minibatches of its valid
rows, the end of an iteration and the state kept."""

import pytest
import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.config.load import validate_data
from rlcli.learning.advantages import ESTIMATORS, gae
from rlcli.learning.on_policy import evaluate_minibatch
from rlcli.run import build_run
from rlcli.timing import Timer


def ppo_run(algo=None, **env):
    return build_run(
        validate_data(
            {
                "run": {"seed": 7, "device": "cpu"},
                "env": {
                    "id": "CartPole-v1",
                    "num_envs": 4,
                    "vectorization": "vector_entry_point",
                    "max_episode_steps": 10,
                    **env,
                },
                "algo": {"name": "ppo", "minibatch_size": 16, "gamma": 0.9, "return_lambda": 0.8, **(algo or {})},
                "collector": {"frames_per_batch": 64, "total_frames": 640},
            }
        )
    )


def test_rows_write_advantages_of_the_rollout_and_flatten_every_row_with_valid():
    run = ppo_run(normalize_reward=False)
    try:
        timer = Timer(run.device)
        batch = run.source.next_batch(timer)
        rows = run.algo.rollout.rows(batch, timer)
    finally:
        run.close()
    advantage, target = gae(
        batch[keys.REWARD],
        batch[keys.VALUE],
        batch[keys.NEXT_VALUE],
        batch[keys.TERMINATED],
        batch[keys.TRUNCATED],
        gamma=0.9,
        lam=0.8,
    )
    assert rows.batch_size == torch.Size([64]) and keys.VALID in rows.keys()
    torch.testing.assert_close(rows[keys.ADVANTAGE], advantage.reshape(-1))
    torch.testing.assert_close(rows[keys.VALUE_TARGET], target.reshape(-1))
    assert "update.advantage" in timer.current


@pytest.mark.parametrize("estimator", ["td0", "td1", "td_lambda"])
def test_rows_write_the_targets_of_the_estimator_value_target_names(estimator):
    # Episodes of at most 10 steps in 16-step rollouts: truncations, terminations and cut episodes.
    run = ppo_run({"value_target": estimator}, normalize_reward=False)
    try:
        timer = Timer(run.device)
        batch = run.source.next_batch(timer)
        rows = run.algo.rollout.rows(batch, timer)
    finally:
        run.close()
    rollout = [batch[k] for k in (keys.REWARD, keys.VALUE, keys.NEXT_VALUE, keys.TERMINATED, keys.TRUNCATED)]
    advantage, target = ESTIMATORS[estimator](*rollout, gamma=0.9, lam=0.8)
    assert bool(batch[keys.TRUNCATED].any())
    torch.testing.assert_close(rows[keys.VALUE_TARGET], target.reshape(-1))
    torch.testing.assert_close(rows[keys.ADVANTAGE], advantage.reshape(-1))
    # On a real rollout next_value[t] is value[t + 1] inside episodes: lambda-returns are gae's targets,
    # and TD(0) and TD(1) targets are not.
    same_as_gae = torch.allclose(target, gae(*rollout, gamma=0.9, lam=0.8)[1], rtol=1e-5, atol=1e-5)
    assert same_as_gae == (estimator == "td_lambda")


def test_ingest_and_sample_draws_valid_rows_only():
    run = ppo_run()
    try:
        timer = Timer(run.device)
        batch = run.source.next_batch(timer)
        # Mark half the steps invalid, and give them an input no valid row has.
        batch[keys.VALID][::2] = False
        batch[keys.OBSERVATION][::2] = 1e6
        sample = run.algo.ingest_and_sample(batch, 200, torch.Generator().manual_seed(0))
    finally:
        run.close()
    assert sample.batch_size == torch.Size([200])
    assert bool((sample[keys.INPUT].abs() < 1e5).all())


def test_finish_folds_only_valid_observations_into_the_statistics_and_moves_the_schedule():
    run = ppo_run(normalize_observation=True)
    try:
        timer = Timer(run.device)
        rollout = run.algo.rollout
        batch = run.source.next_batch(timer)
        batch[keys.VALID][:3] = False
        count = float(rollout.agent.obs_norm.stats.count)
        steps = rollout.step.scheduler.last_epoch
        rollout.finish(batch)
        added = float(rollout.agent.obs_norm.stats.count) - count
    finally:
        run.close()
    assert added == float(batch[keys.VALID].sum())
    assert rollout.step.scheduler.last_epoch == steps + 1


def test_evaluate_minibatch_normalizes_the_advantage_over_valid_rows_only():
    run = ppo_run()
    run.close()
    agent = run.algo.agent
    g = torch.Generator().manual_seed(3)
    batch = TensorDict(
        {
            keys.INPUT: torch.randn(8, 4, generator=g),
            keys.ACTION: torch.randint(0, 2, (8,), generator=g),
            keys.ADVANTAGE: torch.tensor([1.0, 2.0, 3.0, 100.0, -50.0, 4.0, 5.0, 6.0]),
            keys.VALID: torch.tensor([True, True, True, False, False, True, True, True]),
        },
        batch_size=[8],
    )
    out = evaluate_minibatch(agent, batch, normalize_advantage=True)
    valid = out.advantage[batch[keys.VALID]]
    # The valid rows 1..6 centred and scaled by their own unbiased spread.
    expected = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    torch.testing.assert_close(valid, (expected - expected.mean()) / (expected.std() + 1e-8))
    assert float(out.mean(torch.arange(8.0))) == (0 + 1 + 2 + 5 + 6 + 7) / 6
    log_prob, entropy, value = agent.evaluate(batch[keys.INPUT], batch[keys.ACTION])
    torch.testing.assert_close(out.log_prob, log_prob)
    torch.testing.assert_close(out.value, value)


def test_next_values_of_a_cnn_reuse_the_stored_values_where_the_next_step_saw_the_same_frames():
    import numpy as np
    from gymnasium import spaces

    from rlcli.algos.context import BuildContext
    from rlcli.learning.on_policy import next_values
    from rlcli.models.actor_critic import build_actor_critic

    cfg = validate_data({"env": {"id": "CartPole-v1"}, "algo": {"name": "ppo"}, "network": {"hidden_sizes": []}})
    frames = spaces.Box(0, 255, (2, 36, 36), np.uint8)
    ctx = BuildContext(
        frames,
        spaces.Discrete(3),
        network=cfg.network,
        env=cfg.env,
        collector=cfg.collector,
        optim=cfg.optim,
        device=torch.device("cpu"),
        seed=0,
    )
    torch.manual_seed(0)
    agent = build_actor_critic(ctx)
    steps, envs = 5, 3
    generator = torch.Generator().manual_seed(1)
    observation = torch.randint(0, 256, (steps + 1, envs, 2, 36, 36), dtype=torch.uint8, generator=generator)
    next_observation = observation[1:].clone()
    # An env that reset in the same step: its next observation is the final one, not the next step's.
    next_observation[2, 1] = torch.randint(0, 256, (2, 36, 36), dtype=torch.uint8, generator=generator)
    batch = TensorDict({keys.OBSERVATION: observation[:-1], keys.NEXT_OBSERVATION: next_observation}, [steps, envs])
    batch[keys.VALUE] = torch.stack([agent.act(observation[t], generator)[keys.VALUE] for t in range(steps)])
    expected = agent.state_value(next_observation.flatten(0, 1)).view(steps, envs)
    torch.testing.assert_close(next_values(agent, batch), expected, rtol=1e-5, atol=1e-5)
