"""DDPG as TD3's machinery with one critic, no delay and no target smoothing."""

import copy

import pytest
import torch

from rlcli.algos import ALGORITHMS, ddpg, td3
from rlcli.config.errors import ConfigError
from rlcli.config.load import validate_data
from rlcli.timing import Timer


def test_ddpg_is_td3s_machinery_under_its_own_record(pendulum_run):
    assert ALGORITHMS["ddpg"] is ddpg.SPEC
    spec = ddpg.SPEC
    assert spec.phases == td3.SPEC.phases and spec.metrics == td3.SPEC.metrics and spec.total == td3.SPEC.total
    assert spec.name == "ddpg" and spec.config is not td3.SPEC.config
    run = pendulum_run("ddpg", seed=8)
    run.close()
    assert isinstance(run.algo, td3.TD3) and run.algo.settings == ddpg.SINGLE


def test_ddpg_has_one_critic_no_delay_no_smoothing(pendulum_run):
    run = pendulum_run("ddpg", seed=8)
    run.close()
    settings = run.algo.settings
    assert (settings.num_critics, settings.policy_delay, settings.target_noise) == (1, 1, 0.0)
    assert settings.bc_alpha is None
    assert run.algo.agent.critic.members == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [("num_critics", 2), ("policy_delay", 2), ("target_noise", 0.2), ("target_noise_clip", 0.5), ("bc_alpha", 2.5)],
)
def test_td3s_own_fields_are_no_fields_of_ddpg(field, value):
    data = {
        "env": {"id": "Pendulum-v1"},
        "algo": {"name": "ddpg"},
        "collector": {"frames_per_batch": 8, "total_frames": 1000},
    }
    assert not hasattr(validate_data(data).algo, field)
    with pytest.raises(ConfigError) as info:
        validate_data(data | {"algo": {"name": "ddpg", field: value}})
    assert f"algo.{field}" in info.value.render()


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
