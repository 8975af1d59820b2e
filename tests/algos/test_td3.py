"""TD3 and DDPG: losses against plain computations, smoothing-noise clipping, delays, exploration noise."""

import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.algos.td3 import td3_actor_loss, td3_critic_loss
from rlcli.config.load import validate_data
from rlcli.exploration import ActionNoise
from rlcli.run import build_run
from rlcli.timing import Timer


def det_run(name="td3", **algo):
    return build_run(validate_data({
        "run": {"seed": 8, "device": "cpu"},
        "env": {"id": "Pendulum-v1", "num_envs": 2, "vectorization": "sync"},
        "network": {"hidden_sizes": [16, 16], "activation": "relu", "init": "default"},
        "algo": {"name": name, "batch_size": 8, "learning_starts": 16, "replay": {"capacity": 1000}, **algo},
        "collector": {"frames_per_batch": 8, "total_frames": 800},
        "optim": {"max_grad_norm": 0.0},
    }))


def minibatch(size=5, seed=0) -> TensorDict:
    g = torch.Generator().manual_seed(seed)
    return TensorDict({
        keys.INPUT: torch.randn(size, 3, generator=g),
        keys.ACTION: torch.rand(size, 1, generator=g) * 4 - 2,
        keys.REWARD: torch.randn(size, generator=g),
        keys.NEXT_INPUT: torch.randn(size, 3, generator=g),
        keys.TERMINATED: torch.tensor([False, True, False, False, True]),
    }, batch_size=[size])


LOW, HIGH = torch.tensor([-2.0]), torch.tensor([2.0])


def test_ddpg_critic_target_is_the_target_actor_without_smoothing():
    run = det_run("ddpg")
    run.close()
    agent, batch = run.algo.agent, minibatch()
    assert agent.critic.members == 1
    terms = td3_critic_loss(agent, batch, gamma=0.9, target_noise=0.0, noise_clip=0.0, low=LOW, high=HIGH,
                            generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        next_q = agent.critic_target(batch[keys.NEXT_INPUT], agent.actor_target(batch[keys.NEXT_INPUT]))[0]
        target = batch[keys.REWARD] + 0.9 * (~batch[keys.TERMINATED]).float() * next_q
        q = agent.critic(batch[keys.INPUT], batch[keys.ACTION])[0]
    torch.testing.assert_close(terms["loss/critic"], 0.5 * ((q - target) ** 2).mean())


def test_td3_target_takes_the_minimum_of_twin_critics_at_smoothed_actions():
    run = det_run()
    run.close()
    agent, batch = run.algo.agent, minibatch()
    terms = td3_critic_loss(agent, batch, gamma=0.9, target_noise=0.2, noise_clip=0.5, low=LOW, high=HIGH,
                            generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        next_action = agent.actor_target(batch[keys.NEXT_INPUT])
        noise = torch.randn(next_action.shape, generator=torch.Generator().manual_seed(4))
        smoothed = (next_action + (noise * 0.2).clamp(-0.5, 0.5) * 2.0).clamp(-2.0, 2.0)
        next_q = agent.critic_target(batch[keys.NEXT_INPUT], smoothed).min(0).values
        target = batch[keys.REWARD] + 0.9 * (~batch[keys.TERMINATED]).float() * next_q
        q = agent.critic(batch[keys.INPUT], batch[keys.ACTION])
    torch.testing.assert_close(terms["loss/critic"], 0.5 * ((q - target) ** 2).mean(1).sum())


def test_target_smoothing_noise_is_clipped():
    run = det_run()
    run.close()
    agent, batch = run.algo.agent, minibatch(size=5)
    seen = []
    original = agent.critic_target.forward

    def recording(obs, action):
        seen.append(action.clone())
        return original(obs, action)

    agent.critic_target.forward = recording
    # A huge noise std: every draw is clipped to +-0.3 half-ranges (0.6 in Pendulum's units).
    td3_critic_loss(agent, batch, gamma=0.9, target_noise=100.0, noise_clip=0.3, low=LOW * 10, high=HIGH * 10,
                    generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        offset = seen[0] - agent.actor_target(batch[keys.NEXT_INPUT])
    torch.testing.assert_close(offset.abs(), torch.full_like(offset, 0.3 * 20.0))


def test_actor_loss_uses_the_first_critic_and_leaves_the_critics_alone():
    run = det_run()
    run.close()
    agent, batch = run.algo.agent, minibatch()
    loss = td3_actor_loss(agent, batch)["loss/actor"]
    with torch.no_grad():
        expected = -agent.critic(batch[keys.INPUT], agent.actor(batch[keys.INPUT]))[0].mean()
    torch.testing.assert_close(loss, expected)
    loss.backward()
    assert all(p.grad is None for p in agent.critic.parameters())


def test_actor_and_targets_update_exactly_every_policy_delay_critic_updates():
    run = det_run(policy_delay=2, utd_ratio=0.125, learning_starts=0)
    try:
        timer = Timer(run.device)
        agent = run.algo.agent
        changed = []
        for _ in range(4):
            actor = [p.clone() for p in agent.actor.parameters()]
            target = [p.clone() for p in agent.actor_target.parameters()]
            stats = run.algo.learn(run.collector.collect(timer), timer)  # one critic step each
            changed.append((any(not torch.equal(a, b) for a, b in zip(actor, agent.actor.parameters())),
                            any(not torch.equal(a, b) for a, b in zip(target, agent.actor_target.parameters()))))
        assert stats["stats/gradient_steps"] == 1
    finally:
        run.close()
    assert changed == [(False, False), (True, True), (False, False), (True, True)]


def test_exploration_noise_is_scaled_to_the_half_range_and_clipped_actions_are_stored():
    run = det_run(learning_starts=0, noise_scale=5.0)
    try:
        batch = run.collector.collect(Timer(run.device))
    finally:
        run.close()
    actions = batch[keys.ACTION]
    # Noise of 5 half-ranges pushes most actions to the bounds, where they are stored clipped.
    assert actions.abs().max() <= 2.0 and (actions.abs() == 2.0).float().mean() > 0.5


def test_ornstein_uhlenbeck_noise_is_correlated_in_time_and_gaussian_is_not():
    half = torch.tensor([1.0])
    g = torch.Generator().manual_seed(0)
    ou = ActionNoise("ou", scale=0.3, num_envs=1, half_range=half, theta=0.15, dt=1e-2)
    gauss = ActionNoise("gaussian", scale=0.3, num_envs=1, half_range=half)
    zero = torch.zeros(1, 1)
    ou_path = torch.cat([ou(zero, g) for _ in range(2000)]).squeeze(1)
    gauss_path = torch.cat([gauss(zero, g) for _ in range(2000)]).squeeze(1)

    def lag_one(x):
        x = x - x.mean()
        return float((x[1:] * x[:-1]).mean() / x.var())

    assert lag_one(ou_path) > 0.9 and abs(lag_one(gauss_path)) < 0.1
    assert torch.equal(ou.state_dict()["state"], ou.state)
