import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.algos.ppo import ppo_loss
from rlcli.config.load import validate_data
from rlcli.run import build_run
from rlcli.timing import Timer


def make_run(**algo):
    return build_run(validate_data({
        "run": {"seed": 2, "device": "cpu"},
        "env": {"id": "CartPole-v1", "num_envs": 4, "vectorization": "vector_entry_point"},
        "algo": {"name": "ppo", "minibatch_size": 32, **algo},
        "collector": {"frames_per_batch": 128, "total_frames": 1280},
    }))


def minibatch(agent, size=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(size, 4, generator=g)
    action = torch.randint(0, 2, (size,), generator=g)
    with torch.no_grad():
        log_prob, _, value = agent.evaluate(obs, action)
    return TensorDict({
        keys.OBSERVATION: obs, keys.ACTION: action, keys.LOG_PROB: log_prob, keys.VALUE: value,
        keys.ADVANTAGE: torch.randn(size, generator=g), keys.VALUE_TARGET: torch.randn(size, generator=g),
    }, batch_size=[size])


def test_loss_matches_hand_computation_with_shifted_old_policy():
    run = make_run()
    run.close()
    agent = run.algo.agent
    batch = minibatch(agent)
    # Pretend the acting policy gave other probabilities, so ratios move off 1.
    batch[keys.LOG_PROB] = batch[keys.LOG_PROB] + torch.linspace(-0.5, 0.5, 16)
    terms = ppo_loss(agent, batch, clip_epsilon=0.2, clip_value=None, normalize_advantage=True)
    logits = agent.policy.net(batch[keys.OBSERVATION])
    log_prob = torch.log_softmax(logits, -1).gather(1, batch[keys.ACTION][:, None]).squeeze(1)
    ratio = torch.exp(log_prob - batch[keys.LOG_PROB])
    adv = batch[keys.ADVANTAGE]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    expected = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
    torch.testing.assert_close(terms["loss/policy"], expected)
    value = agent.value(batch[keys.OBSERVATION])
    torch.testing.assert_close(terms["loss/value"], ((value - batch[keys.VALUE_TARGET]) ** 2).mean())
    assert 0 < terms["stats/clip_fraction"] < 1
    assert terms["stats/approx_kl"] > 0


def test_value_clipping_limits_the_value_update():
    run = make_run()
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


def test_update_runs_epochs_of_minibatches_and_target_kl_stops_early():
    full = make_run(epochs=4)
    try:
        timer = Timer(full.device)
        batch = full.algo.advantages(full.collector.collect(timer))
        valid = int(batch[keys.VALID].sum())
        stats = full.algo.update(batch, timer)
    finally:
        full.close()
    per_epoch = -(-valid // 32)
    assert per_epoch * 4 - 4 <= stats["stats/gradient_steps"] <= per_epoch * 4
    early = make_run(epochs=50, target_kl=1e-6)
    try:
        timer = Timer(early.device)
        batch = early.algo.advantages(early.collector.collect(timer))
        stats = early.algo.update(batch, timer)
    finally:
        early.close()
    assert stats["stats/gradient_steps"] < 50 * per_epoch / 2


def test_clip_schedule_and_lr_schedule_decay_linearly():
    run = make_run(clip_schedule="linear")
    try:
        run.cfg  # noqa: B018
        timer = Timer(run.device)
        lrs, clips = [], []
        for _ in range(3):
            lrs.append(run.algo.step.lr)
            stats = run.algo.update(run.algo.advantages(run.collector.collect(timer)), timer)
            clips.append(stats["stats/clip_epsilon"])
    finally:
        run.close()
    # Constant lr by default; the clip range falls by 1/10 of 0.2 per iteration of 10.
    assert lrs == [3e-4] * 3
    assert [round(c, 6) for c in clips] == [0.2, 0.18, 0.16]
