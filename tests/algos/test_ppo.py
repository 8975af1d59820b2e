import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.algos.ppo import ppo_loss
from rlcli.config.load import validate_data
from rlcli.learning.on_policy import prepare_rollout
from rlcli.run import build_run
from rlcli.timing import Timer


def minibatch(agent, size=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(size, 4, generator=g)
    action = torch.randint(0, 2, (size,), generator=g)
    with torch.no_grad():
        log_prob, _, value = agent.evaluate(obs, action)
    return TensorDict(
        {
            keys.INPUT: obs,
            keys.ACTION: action,
            keys.LOG_PROB: log_prob,
            keys.VALUE: value,
            keys.ADVANTAGE: torch.randn(size, generator=g),
            keys.VALUE_TARGET: torch.randn(size, generator=g),
        },
        batch_size=[size],
    )


def test_loss_matches_hand_computation_with_shifted_old_policy(cartpole_run):
    run = cartpole_run("ppo", seed=2, frames_per_batch=128, total_frames=1280, minibatch_size=32)
    run.close()
    agent = run.algo.agent
    batch = minibatch(agent)
    # Pretend the acting policy gave other probabilities, so ratios move off 1.
    batch[keys.LOG_PROB] = batch[keys.LOG_PROB] + torch.linspace(-0.5, 0.5, 16)
    terms = ppo_loss(agent, batch, clip_epsilon=0.2, clip_value=None, normalize_advantage=True)
    logits = agent.policy.net(batch[keys.INPUT])
    log_prob = torch.log_softmax(logits, -1).gather(1, batch[keys.ACTION][:, None]).squeeze(1)
    ratio = torch.exp(log_prob - batch[keys.LOG_PROB])
    adv = batch[keys.ADVANTAGE]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    expected = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
    torch.testing.assert_close(terms["loss/policy"], expected)
    value = agent.value(batch[keys.INPUT])
    torch.testing.assert_close(terms["loss/value"], ((value - batch[keys.VALUE_TARGET]) ** 2).mean())
    assert 0 < terms["stats/clip_fraction"] < 1
    assert terms["stats/approx_kl"] > 0


def test_value_clipping_limits_the_value_update(cartpole_run):
    run = cartpole_run("ppo", seed=2, frames_per_batch=128, total_frames=1280, minibatch_size=32)
    run.close()
    agent = run.algo.agent
    batch = minibatch(agent)
    batch[keys.VALUE] = batch[keys.VALUE] - 5.0
    batch[keys.VALUE_TARGET] = batch[keys.VALUE] + 5.0
    clipped = ppo_loss(agent, batch, clip_epsilon=0.2, clip_value=0.1, normalize_advantage=True)
    plain = ppo_loss(agent, batch, clip_epsilon=0.2, clip_value=None, normalize_advantage=True)
    # The clipped prediction stays within 0.1 of the old value, 4.9 short of the target.
    assert clipped["loss/value"] >= 4.9**2 - 1e-3
    assert plain["loss/value"] < clipped["loss/value"]


def test_learn_runs_epochs_of_minibatches(cartpole_run):
    run = cartpole_run("ppo", seed=2, frames_per_batch=128, total_frames=1280, minibatch_size=32, epochs=4)
    try:
        timer = Timer(run.device)
        batch = run.source.next_batch(timer)
        valid = int(batch[keys.VALID].sum())
        stats = run.algo.learn(batch, timer)
    finally:
        run.close()
    per_epoch = -(-valid // 32)
    # A one-sample tail is skipped, at most once per epoch.
    assert per_epoch * 4 - 4 <= stats["stats/gradient_steps"] <= per_epoch * 4


def test_target_kl_stops_inside_the_first_epoch(cartpole_run):
    run = cartpole_run(
        "ppo", seed=2, frames_per_batch=128, total_frames=1280, minibatch_size=32, epochs=50, target_kl=1e-6
    )
    try:
        timer = Timer(run.device)
        batch = run.source.next_batch(timer)
        valid = int(batch[keys.VALID].sum())
        stats = run.algo.learn(batch, timer)
    finally:
        run.close()
    # The first minibatch sees the acting policy (KL 0) and steps; the second already
    # exceeds 1e-6 and stops the update there, not at the end of its epoch.
    assert -(-valid // 32) > 2
    assert stats["stats/gradient_steps"] == 1


def test_clip_schedule_and_lr_schedule_decay_linearly(cartpole_run):
    run = cartpole_run(
        "ppo", seed=2, frames_per_batch=128, total_frames=1280, minibatch_size=32, clip_schedule="linear"
    )
    cfg = run.cfg.model_copy(update={"optim": run.cfg.optim.model_copy(update={"lr_schedule": "linear"})})
    run.close()
    run = build_run(cfg)
    try:
        timer = Timer(run.device)
        lrs, clips = [], []
        for _ in range(3):
            stats = run.algo.learn(run.source.next_batch(timer), timer)
            lrs.append(stats["optim/lr"])
            clips.append(stats["stats/clip_epsilon"])
    finally:
        run.close()
    # 10 iterations in the run: both fall by a tenth of their start value per iteration.
    assert [round(lr, 9) for lr in lrs] == [3e-4, 2.7e-4, 2.4e-4]
    assert [round(c, 6) for c in clips] == [0.2, 0.18, 0.16]


def test_constant_schedules_stay_constant(cartpole_run):
    run = cartpole_run("ppo", seed=2, frames_per_batch=128, total_frames=1280, minibatch_size=32)
    try:
        timer = Timer(run.device)
        stats = [run.algo.learn(run.source.next_batch(timer), timer) for _ in range(3)]
    finally:
        run.close()
    assert [s["optim/lr"] for s in stats] == [3e-4] * 3
    assert [s["stats/clip_epsilon"] for s in stats] == [0.2] * 3


def test_first_minibatch_ratio_is_one_with_observation_normalization():
    run = build_run(
        validate_data(
            {
                "run": {"seed": 3, "device": "cpu"},
                "env": {"id": "Pendulum-v1", "num_envs": 4, "vectorization": "sync", "normalize_observation": True},
                "algo": {"name": "ppo", "minibatch_size": 64, "epochs": 2},
                "collector": {"frames_per_batch": 128, "total_frames": 1280},
            }
        )
    )
    try:
        timer = Timer(run.device)
        for _ in range(2):
            run.algo.learn(run.source.next_batch(timer), timer)
        agent = run.algo.agent
        # The statistics have moved away from their start, so stale inputs would show.
        assert agent.obs_norm.stats.count > 200
        batch = run.source.next_batch(timer)
        prepare_rollout(agent, run.algo.rollout.reward_scaler, batch, gamma=0.99, lam=0.95)
        with torch.no_grad():
            log_prob, _, value = agent.evaluate(batch[keys.INPUT].flatten(0, 1), batch[keys.ACTION].flatten(0, 1))
        stored = batch[keys.LOG_PROB].flatten(0, 1)
        torch.testing.assert_close(log_prob, stored, atol=1e-5, rtol=0)
        torch.testing.assert_close(value, batch[keys.VALUE].flatten(0, 1), atol=1e-5, rtol=0)
        # Had the statistics taken in this rollout first, the inputs (and ratios) would differ.
        agent.obs_norm.observe(batch[keys.OBSERVATION])
        with torch.no_grad():
            moved, _, _ = agent.evaluate(
                agent.obs_norm(batch[keys.OBSERVATION]).flatten(0, 1), batch[keys.ACTION].flatten(0, 1)
            )
        assert (moved - stored).abs().max() > 1e-4
    finally:
        run.close()


def test_masked_rows_count_for_nothing_in_any_term(cartpole_run):
    """A minibatch with invalid rows (reset steps of NEXT_STEP envs) gives the terms of its valid rows alone."""
    run = cartpole_run("ppo", seed=2, frames_per_batch=128, total_frames=1280, minibatch_size=32)
    run.close()
    agent = run.algo.agent
    batch = minibatch(agent, size=24)
    batch[keys.LOG_PROB] = batch[keys.LOG_PROB] + torch.linspace(-0.4, 0.4, 24)
    valid = torch.ones(24, dtype=torch.bool)
    valid[[0, 5, 6, 17, 23]] = False
    batch[keys.VALID] = valid
    for clip_value in (None, 0.1):
        masked = ppo_loss(agent, batch, clip_epsilon=0.2, clip_value=clip_value, normalize_advantage=True)
        kept = ppo_loss(
            agent, batch[valid].exclude(keys.VALID), clip_epsilon=0.2, clip_value=clip_value, normalize_advantage=True
        )
        for name in kept:
            torch.testing.assert_close(masked[name], kept[name], msg=name)
    # Gradients too: the invalid rows' inputs get none.
    batch[keys.INPUT] = batch[keys.INPUT].clone().requires_grad_(True)
    ppo_loss(agent, batch, clip_epsilon=0.2, clip_value=None, normalize_advantage=True)["loss/policy"].backward()
    assert batch[keys.INPUT].grad[~valid].abs().sum() == 0 and batch[keys.INPUT].grad[valid].abs().sum() > 0
