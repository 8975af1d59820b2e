"""SAC (and REDQ as SAC with an ensemble): losses against plain computations, the temperature,
the actor delay and the critic subsets."""

import pytest
import torch

from rlcli import keys
from rlcli.algos.sac import sac_actor_loss, sac_critic_loss
from rlcli.timing import Timer


def test_critic_loss_matches_a_plain_soft_bellman_target(pendulum_run, minibatch, critic_member):
    run = pendulum_run("sac", seed=6)
    run.close()
    agent, batch = run.algo.agent, minibatch()
    alpha = torch.tensor(0.3)
    with torch.no_grad():
        next_action, next_log_prob = agent.actor(batch[keys.NEXT_INPUT], torch.Generator().manual_seed(5))
    terms = sac_critic_loss(agent, batch, next_action, next_log_prob, gamma=0.9, alpha=alpha, subset=None)
    with torch.no_grad():
        q_next = (
            torch.stack([critic_member(agent.critic_target, e, batch[keys.NEXT_INPUT], next_action) for e in range(2)])
            .min(0)
            .values
        )
        target = batch[keys.REWARD] + 0.9 * (~batch[keys.TERMINATED]).float() * (q_next - 0.3 * next_log_prob)
        q = torch.stack([critic_member(agent.critic, e, batch[keys.INPUT], batch[keys.ACTION]) for e in range(2)])
    expected = 0.5 * sum(((q[e] - target) ** 2).mean() for e in range(2))
    torch.testing.assert_close(terms["loss/critic"], expected)
    torch.testing.assert_close(terms["td_error"], (q - target).abs().mean(0))


def test_a_critic_subset_takes_the_minimum_of_those_members_only(pendulum_run, minibatch, critic_member):
    run = pendulum_run("sac", seed=6, num_critics=4, critic_subset=2)
    run.close()
    agent, batch = run.algo.agent, minibatch()
    subset = torch.tensor([3, 1])
    with torch.no_grad():
        next_action, next_log_prob = agent.actor(batch[keys.NEXT_INPUT], torch.Generator().manual_seed(5))
    terms = sac_critic_loss(agent, batch, next_action, next_log_prob, gamma=0.9, alpha=torch.tensor(0.0), subset=subset)
    with torch.no_grad():
        q_next = (
            torch.stack([critic_member(agent.critic_target, e, batch[keys.NEXT_INPUT], next_action) for e in (3, 1)])
            .min(0)
            .values
        )
        target = batch[keys.REWARD] + 0.9 * (~batch[keys.TERMINATED]).float() * q_next
        q = torch.stack([critic_member(agent.critic, e, batch[keys.INPUT], batch[keys.ACTION]) for e in range(4)])
    torch.testing.assert_close(terms["loss/critic"], 0.5 * ((q - target) ** 2).mean(1).sum())


def test_actor_loss_and_its_gradient_reach_only_the_actor(pendulum_run, minibatch, critic_member):
    run = pendulum_run("sac", seed=6)
    run.close()
    agent, batch = run.algo.agent, minibatch()
    action, log_prob = agent.actor(batch[keys.INPUT], torch.Generator().manual_seed(3))
    terms = sac_actor_loss(agent, batch, action, log_prob, alpha=torch.tensor(0.2), actor_q="min", target_entropy=-1.0)
    with torch.no_grad():
        q = torch.stack([critic_member(agent.critic, e, batch[keys.INPUT], action) for e in range(2)]).min(0).values
    torch.testing.assert_close(terms["loss/actor"], (0.2 * log_prob - q).mean())
    terms["loss/actor"].backward()
    assert all(p.grad is None for p in agent.critic.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in agent.actor.parameters())
    assert all(p.requires_grad for p in agent.critic.parameters())


# tanh(N(0, 1)) has an entropy near 0.55 nats, above the target of -1; a std of e^-6 is far below it.
@pytest.mark.parametrize(("log_std", "direction"), [(-6.0, 1), (0.0, -1)], ids=["too_sure", "too_random"])
def test_temperature_moves_towards_the_target_entropy(log_std, direction, pendulum_run, minibatch):
    run = pendulum_run("sac", seed=6)
    run.close()
    agent, algo = run.algo.agent, run.algo
    # A policy far narrower (wider) than the target entropy of -1 must raise (lower) alpha.
    last = agent.actor.net[-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias[:1].zero_()
        last.bias[1:].fill_(log_std)
    before = float(agent.log_alpha.detach())
    batch = minibatch()
    action, log_prob = agent.actor(batch[keys.INPUT], torch.Generator().manual_seed(0))
    terms = sac_actor_loss(
        agent, batch, action, log_prob, alpha=algo.alpha, actor_q="min", target_entropy=algo.target_entropy
    )
    # The actor's loss leaves alpha alone: only the temperature loss moves it.
    algo.actor_step(terms["loss/actor"].detach() + terms["loss/alpha"], Timer(torch.device("cpu")))
    assert (float(agent.log_alpha.detach()) - before) * direction > 0


def test_actor_and_temperature_step_every_policy_delay_critic_steps(pendulum_run):
    run = pendulum_run("sac", seed=6, policy_delay=3, utd_ratio=0.25, learning_starts=0)
    try:
        timer = Timer(run.device)
        actor = [p.clone() for p in run.algo.agent.actor.parameters()]
        log_alpha = float(run.algo.agent.log_alpha.detach())
        changed = []
        for _ in range(3):
            stats = run.algo.learn(run.source.next_batch(timer), timer)  # 2 critic steps each
            now = [p.clone() for p in run.algo.agent.actor.parameters()]
            changed.append(any(not torch.equal(a, b) for a, b in zip(actor, now)))
            actor = now
        assert stats["stats/gradient_steps"] == 2
    finally:
        run.close()
    # Critic steps 1-2: no actor step; 3-4: the 3rd; 5-6: the 6th.
    assert changed == [False, True, True]
    assert float(run.algo.agent.log_alpha.detach()) != log_alpha


def test_critic_subsets_are_drawn_from_the_runs_generator(pendulum_run):
    def subsets(seed: int) -> list[list[int]]:
        run = pendulum_run("sac", seed=6, num_critics=10, critic_subset=2)
        run.close()
        run.algo.noise_generator.manual_seed(seed)
        return [run.algo._subset().tolist() for _ in range(20)]

    torch.manual_seed(0)
    first = subsets(1)
    state = torch.get_rng_state()
    assert subsets(1) == first
    # The global generator is never used.
    assert torch.equal(torch.get_rng_state(), state)
    assert subsets(2) != first
    assert all(len(set(s)) == 2 and all(0 <= i < 10 for i in s) for s in first)


def test_warm_up_acts_uniformly_inside_the_bounds(pendulum_run):
    run = pendulum_run("sac", seed=6, learning_starts=800)
    try:
        timer = Timer(run.device)
        actions = torch.cat([run.source.next_batch(timer)[keys.ACTION].clone() for _ in range(20)])
    finally:
        run.close()
    assert actions.abs().max() <= 2.0
    assert actions.min() < -1.5 and actions.max() > 1.5 and abs(float(actions.mean())) < 0.3


def test_exploration_hold_keeps_each_envs_draw_for_that_many_steps_and_resumes_it(pendulum_run):
    """With ``exploration_hold = 3`` the same observation gets the same sampled action three steps
    running, then a fresh draw; each env has its own draw; a checkpoint carries the held draw."""

    def build(hold: int):
        run = pendulum_run("sac", seed=4, learning_starts=0, exploration_hold=hold)
        run.close()
        return run.algo

    observation = torch.tensor([[1.0, 0.0, 0.5], [1.0, 0.0, 0.5]])
    generator = torch.Generator().manual_seed(0)
    algo = build(3)
    actions = [algo.act(observation, generator)[keys.ACTION] for _ in range(4)]
    assert torch.equal(actions[0], actions[1]) and torch.equal(actions[1], actions[2])
    assert not torch.equal(actions[2], actions[3])
    assert not torch.equal(actions[0][0], actions[0][1])
    state = algo.state_dict(replay=False)
    resumed = build(3)
    resumed.load_state_dict(state)
    resumed.agent.load_state_dict(algo.agent.state_dict())
    torch.testing.assert_close(resumed.act(observation, generator)[keys.ACTION], actions[3])
    fresh = build(1)
    first, second = (fresh.act(observation, generator)[keys.ACTION] for _ in range(2))
    assert not torch.equal(first, second)
