"""DDPG as TD3's machinery with one critic, no delay and no target smoothing."""

import copy

import torch

from rlcli.algos import ALGORITHMS, ddpg, td3
from rlcli.timing import Timer


def test_ddpg_is_td3s_record_under_its_own_config():
    assert ALGORITHMS["ddpg"] is ddpg.SPEC
    spec = ddpg.SPEC
    assert spec.build is td3.build and spec.build_agent is td3.build_agent
    assert spec.phases == td3.SPEC.phases and spec.metrics == td3.SPEC.metrics and spec.total == td3.SPEC.total
    assert spec.name == "ddpg" and spec.config is not td3.SPEC.config


def test_ddpg_config_defaults_are_one_critic_no_delay_no_smoothing(pendulum_run):
    run = pendulum_run("ddpg", seed=8)
    run.close()
    cfg = run.cfg.algo
    assert (cfg.num_critics, cfg.policy_delay, cfg.target_noise) == (1, 1, 0.0)
    assert run.algo.agent.critic.members == 1


def test_ddpg_moves_the_actor_and_both_targets_at_every_critic_step(pendulum_run):
    run = pendulum_run("ddpg", seed=8, learning_starts=0, utd_ratio=0.125)
    try:
        timer = Timer(run.device)
        agent = run.algo.agent
        actor = copy.deepcopy(agent.actor.state_dict())
        targets = [copy.deepcopy(agent.actor_target.state_dict()), copy.deepcopy(agent.critic_target.state_dict())]
        # 8 frames at 0.125: one critic step, and with it one actor step and both target updates.
        stats = run.algo.learn(run.source.next_batch(timer), timer)
    finally:
        run.close()
    assert stats["stats/gradient_steps"] == 1.0 and "loss/actor" in stats
    assert not all(torch.equal(v, agent.actor.state_dict()[k]) for k, v in actor.items())
    for before, module in zip(targets, (agent.actor_target, agent.critic_target)):
        assert not all(torch.equal(v, module.state_dict()[k]) for k, v in before.items())
