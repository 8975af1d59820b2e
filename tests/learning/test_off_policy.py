"""The ReplayLearner every off-policy algorithm runs its steps through: the learn skeleton, the
warm-up's uniform actions, and its state."""

import torch

from rlcli import keys
from rlcli.config.load import validate_data
from rlcli.learning.off_policy import total_loss
from rlcli.run import build_run
from rlcli.timing import Timer


def pendulum_sac(**algo):
    return build_run(
        validate_data(
            {
                "run": {"seed": 5, "device": "cpu"},
                "env": {"id": "Pendulum-v1", "num_envs": 2, "vectorization": "sync"},
                "network": {"hidden_sizes": [8], "activation": "relu", "init": "default"},
                "algo": {"name": "sac", "batch_size": 4, "replay": {"capacity": 1000}, **algo},
                "collector": {"frames_per_batch": 8, "total_frames": 800},
                "optim": {"lr_schedule": "linear"},
            }
        )
    )


def test_learn_stores_the_batch_runs_the_steps_it_pays_for_and_moves_every_schedule():
    run = pendulum_sac(learning_starts=0, utd_ratio=0.5)
    try:
        timer = Timer(run.device)
        learner = run.algo.learner
        samples = []

        def update(sample, timer):
            samples.append(sample)
            return {"loss/x": torch.tensor(float(len(samples)))}

        lrs = [step.lr for step in learner.steps.values()]
        stats = learner.learn(run.source.next_batch(timer), timer, update)
        after = [step.lr for step in learner.steps.values()]
    finally:
        run.close()
    # 8 frames at 0.5 steps a frame: 4 updates on samples of batch_size, each normalized.
    assert len(samples) == 4 and all(s.batch_size == torch.Size([4]) for s in samples)
    assert all(keys.INPUT in s.keys() and keys.NEXT_INPUT in s.keys() for s in samples)
    assert stats["loss/x"] == 2.5 and stats["stats/gradient_steps"] == 4.0 and stats["stats/buffer_size"] == 8.0
    # The lr of the row is the one before the schedule moved; every step's schedule moved once.
    assert stats["optim/lr"] == lrs[0]
    assert all(a < b for a, b in zip(after, lrs))


def test_warm_up_acts_uniformly_in_the_bounds_then_with_the_actor():
    run = pendulum_sac(learning_starts=16)
    try:
        timer = Timer(run.device)
        learner, bounds = run.algo.learner, run.algo.bounds
        observation = torch.zeros(2, 3)
        called = []

        def actor(obs):
            called.append(obs)
            return torch.full((obs.shape[0], 1), 0.5)

        warm = torch.cat(
            [learner.act(observation, torch.Generator().manual_seed(i), bounds, actor)[keys.ACTION] for i in range(200)]
        )
        learner.replay.observe(run.source.next_batch(timer))
        learner.replay.observe(run.source.next_batch(timer))
        after = learner.act(observation, torch.Generator().manual_seed(0), bounds, actor)[keys.ACTION]
    finally:
        run.close()
    assert len(called) == 1 and torch.equal(after, torch.full((2, 1), 0.5))
    assert warm.min() >= -2.0 and warm.max() <= 2.0 and warm.std() > 1.0


def test_state_round_trips_steps_generator_and_replay_by_name():
    run = pendulum_sac(learning_starts=0)
    other = pendulum_sac(learning_starts=0)
    try:
        timer = Timer(run.device)
        for _ in range(3):
            run.algo.learn(run.source.next_batch(timer), timer)
        state = run.algo.learner.state_dict(replay=True)
        assert {"critic_step", "actor_step", "generator", "replay"} <= set(state)
        other.algo.learner.load_state_dict(state)
        mine = run.algo.learner.replay.sample(4, torch.Generator().manual_seed(3))
        theirs = other.algo.learner.replay.sample(4, torch.Generator().manual_seed(3))
        assert torch.equal(run.algo.learner.generator.get_state(), other.algo.learner.generator.get_state())
        assert torch.equal(mine[keys.OBSERVATION], theirs[keys.OBSERVATION])
        assert other.algo.critic_step.lr == run.algo.critic_step.lr
    finally:
        run.close()
        other.close()


def test_total_loss_sums_the_named_terms_in_order_and_leaves_out_absent_ones():
    names = ("loss/critic", "loss/actor", "loss/alpha")
    terms = {"loss/critic": torch.tensor(0.5), "loss/actor": torch.tensor(-2.0), "loss/alpha": torch.tensor(0.25)}
    assert float(total_loss(terms, names)) == (0.5 + -2.0) + 0.25
    # An iteration of critic steps only: the actor's means are absent, not zeros to add.
    assert total_loss({"loss/critic": 0.5, "stats/q_mean": 3.0}, names) == 0.5
    assert total_loss({"stats/q_mean": 3.0}, names) is None
