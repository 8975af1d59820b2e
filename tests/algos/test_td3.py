"""TD3 and DDPG: losses against plain computations, smoothing-noise clipping, delays, exploration noise."""

import torch

from rlcli import keys
from rlcli.algos.td3 import td3_actor_loss, td3_critic_loss
from rlcli.timing import Timer

LOW, HIGH = torch.tensor([-2.0]), torch.tensor([2.0])


def test_ddpg_critic_target_is_the_target_actor_without_smoothing(pendulum_run, minibatch):
    run = pendulum_run("ddpg", seed=8)
    run.close()
    agent, batch = run.algo.agent, minibatch()
    assert agent.critic.members == 1
    terms = td3_critic_loss(
        agent,
        batch,
        gamma=0.9,
        target_noise=0.0,
        noise_clip=0.0,
        low=LOW,
        high=HIGH,
        generator=torch.Generator().manual_seed(0),
    )
    with torch.no_grad():
        next_q = agent.critic_target(batch[keys.NEXT_INPUT], agent.actor_target(batch[keys.NEXT_INPUT]))[0]
        target = batch[keys.REWARD] + 0.9 * (~batch[keys.TERMINATED]).float() * next_q
        q = agent.critic(batch[keys.INPUT], batch[keys.ACTION])[0]
    torch.testing.assert_close(terms["loss/critic"], 0.5 * ((q - target) ** 2).mean())


def test_td3_target_takes_the_minimum_of_twin_critics_at_smoothed_actions(pendulum_run, minibatch):
    run = pendulum_run("td3", seed=8)
    run.close()
    agent, batch = run.algo.agent, minibatch()
    terms = td3_critic_loss(
        agent,
        batch,
        gamma=0.9,
        target_noise=0.2,
        noise_clip=0.5,
        low=LOW,
        high=HIGH,
        generator=torch.Generator().manual_seed(4),
    )
    with torch.no_grad():
        next_action = agent.actor_target(batch[keys.NEXT_INPUT])
        noise = torch.randn(next_action.shape, generator=torch.Generator().manual_seed(4))
        smoothed = (next_action + (noise * 0.2).clamp(-0.5, 0.5) * 2.0).clamp(-2.0, 2.0)
        next_q = agent.critic_target(batch[keys.NEXT_INPUT], smoothed).min(0).values
        target = batch[keys.REWARD] + 0.9 * (~batch[keys.TERMINATED]).float() * next_q
        q = agent.critic(batch[keys.INPUT], batch[keys.ACTION])
    torch.testing.assert_close(terms["loss/critic"], 0.5 * ((q - target) ** 2).mean(1).sum())


def test_target_smoothing_noise_is_clipped(pendulum_run, minibatch):
    run = pendulum_run("td3", seed=8)
    run.close()
    agent, batch = run.algo.agent, minibatch(size=5)
    seen = []
    original = agent.critic_target.forward

    def recording(obs, action):
        seen.append(action.clone())
        return original(obs, action)

    agent.critic_target.forward = recording
    # A huge noise std: every draw is clipped to +-0.3 half-ranges (0.6 in Pendulum's units).
    td3_critic_loss(
        agent,
        batch,
        gamma=0.9,
        target_noise=100.0,
        noise_clip=0.3,
        low=LOW * 10,
        high=HIGH * 10,
        generator=torch.Generator().manual_seed(0),
    )
    with torch.no_grad():
        offset = seen[0] - agent.actor_target(batch[keys.NEXT_INPUT])
    torch.testing.assert_close(offset.abs(), torch.full_like(offset, 0.3 * 20.0))


def test_actor_loss_uses_the_first_critic_and_leaves_the_critics_alone(pendulum_run, minibatch):
    run = pendulum_run("td3", seed=8)
    run.close()
    agent, batch = run.algo.agent, minibatch()
    loss = td3_actor_loss(agent, batch)["loss/actor"]
    with torch.no_grad():
        expected = -agent.critic(batch[keys.INPUT], agent.actor(batch[keys.INPUT]))[0].mean()
    torch.testing.assert_close(loss, expected)
    loss.backward()
    assert all(p.grad is None for p in agent.critic.parameters())


def test_actor_and_targets_update_exactly_every_policy_delay_critic_updates(pendulum_run):
    run = pendulum_run("td3", seed=8, policy_delay=2, utd_ratio=0.125, learning_starts=0)
    try:
        timer = Timer(run.device)
        agent = run.algo.agent
        changed = []
        for _ in range(4):
            actor = [p.clone() for p in agent.actor.parameters()]
            target = [p.clone() for p in agent.actor_target.parameters()]
            stats = run.algo.learn(run.source.next_batch(timer), timer)  # one critic step each
            changed.append(
                (
                    any(not torch.equal(a, b) for a, b in zip(actor, agent.actor.parameters())),
                    any(not torch.equal(a, b) for a, b in zip(target, agent.actor_target.parameters())),
                )
            )
        assert stats["stats/gradient_steps"] == 1
    finally:
        run.close()
    assert changed == [(False, False), (True, True), (False, False), (True, True)]


def test_exploration_noise_is_scaled_to_the_half_range_and_clipped_actions_are_stored(pendulum_run):
    run = pendulum_run("td3", seed=8, learning_starts=0, noise_scale=5.0)
    try:
        batch = run.source.next_batch(Timer(run.device))
    finally:
        run.close()
    actions = batch[keys.ACTION]
    # Noise of 5 half-ranges pushes most actions to the bounds, where they are stored clipped.
    assert actions.abs().max() <= 2.0 and (actions.abs() == 2.0).float().mean() > 0.5
