"""CrossQ: batch renormalization against a plain computation, which passes update its statistics, the
joint critic forward and its loss, the actor's delay, and the target-network keys it refuses."""

import pytest
import torch

from rlcli import keys
from rlcli.algos.crossq import crossq_critic_loss
from rlcli.config.errors import ConfigError
from rlcli.config.load import validate_data
from rlcli.models.batch_renorm import BatchRenorm, learning
from rlcli.timing import Timer


def test_batch_renorm_normalizes_by_the_batch_while_learning_and_by_running_statistics_otherwise():
    layer = BatchRenorm(3, momentum=0.1, eps=1e-3, warmup=100)
    with torch.no_grad():
        layer.scale.copy_(torch.tensor([1.0, 2.0, 0.5]))
        layer.shift.copy_(torch.tensor([0.0, 1.0, -1.0]))
    x = torch.randn(64, 3, generator=torch.Generator().manual_seed(0)) * 3 + 2
    with learning(layer):
        out = layer(x)
    mean, var = x.mean(0), x.var(0)
    torch.testing.assert_close(out, layer.scale * (x - mean) / (var + 1e-3).sqrt() + layer.shift)
    # The running statistics moved a tenth of the way from (0, 1) toward the batch's; one step counted.
    torch.testing.assert_close(layer.running_mean, 0.1 * mean)
    torch.testing.assert_close(layer.running_var, 0.9 + 0.1 * var)
    assert int(layer.steps) == 1
    # Outside learning(): the running statistics, and nothing moves.
    before = layer.running_mean.clone()
    out = layer(x)
    torch.testing.assert_close(out, layer.scale * (x - before) / (layer.running_var + 1e-3).sqrt() + layer.shift)
    torch.testing.assert_close(layer.running_mean, before)
    assert int(layer.steps) == 1


def test_after_the_warm_up_the_batch_statistics_are_renormalized_with_clipped_r_and_d():
    layer = BatchRenorm(2, momentum=0.01, eps=1e-3, warmup=0, rmax=3.0, dmax=5.0)
    with torch.no_grad():
        layer.running_mean.copy_(torch.tensor([0.0, 10.0]))
        layer.running_var.copy_(torch.tensor([1.0, 0.01]))
        layer.steps.fill_(1)
    x = torch.randn(32, 2, generator=torch.Generator().manual_seed(1)) * 2
    mean, var = x.mean(0), x.var(0)
    running_std = (torch.tensor([1.0, 0.01]) + 1e-3).sqrt()
    r = ((var + 1e-3).sqrt() / running_std).clamp(1 / 3, 3)
    d = ((mean - torch.tensor([0.0, 10.0])) / running_std).clamp(-5, 5)
    used_mean, used_var = mean - d * var.sqrt() / r, var / r**2
    with learning(layer):
        out = layer(x)
    torch.testing.assert_close(out, (x - used_mean) / (used_var + 1e-3).sqrt())
    # The second feature's statistics are far off: both corrections hit their clips.
    assert float(r[1]) == 3.0 and float(d[1]) == -5.0


def test_an_ensembles_layer_keeps_statistics_per_member():
    layer = BatchRenorm(2, members=3)
    x = torch.randn(3, 16, 2) + torch.tensor([0.0, 5.0, -5.0]).view(3, 1, 1)
    with learning(layer):
        out = layer(x)
    assert layer.running_mean.shape == (3, 1, 2)
    torch.testing.assert_close(out.mean(1), torch.zeros(3, 2), atol=1e-5, rtol=0)


def test_the_joint_critic_forward_regresses_onto_its_own_next_values(pendulum_run, minibatch):
    run = pendulum_run("crossq", seed=3, renorm_warmup_steps=0)
    run.close()
    agent = run.algo.agent
    batch = minibatch(6)
    with torch.no_grad():
        next_action, next_log_prob = agent.actor(batch[keys.NEXT_INPUT], torch.Generator().manual_seed(2))
    state = {k: v.clone() for k, v in agent.critic.state_dict().items()}
    terms = crossq_critic_loss(agent, batch, next_action, next_log_prob, gamma=0.9, alpha=torch.tensor(0.2))
    # Nothing but the critics gets a gradient from the critic loss.
    terms["loss/critic"].backward()
    assert all(p.grad is None for p in agent.actor.parameters())
    assert all(p.grad is not None for p in agent.critic.parameters())
    # The same pass written out: both halves through the critics at once, normalized by all 12 rows.
    after = agent.critic.state_dict()
    agent.critic.load_state_dict(state)
    with learning(agent.critic):
        q = agent.critic(
            torch.cat([batch[keys.INPUT], batch[keys.NEXT_INPUT]]), torch.cat([batch[keys.ACTION], next_action])
        )
    target = batch[keys.REWARD] + 0.9 * (~batch[keys.TERMINATED]).float() * (
        q[:, 6:].min(0).values.detach() - 0.2 * next_log_prob
    )
    expected = 0.5 * ((q[:, :6] - target) ** 2).mean(1).sum()
    torch.testing.assert_close(terms["loss/critic"].detach(), expected.detach())
    # The pass moved the critics' running statistics (one learning forward), which acting then reads.
    moved = [name for name in state if name.endswith("running_mean") and not torch.equal(state[name], after[name])]
    assert moved


def test_the_actor_steps_every_policy_delay_critic_steps_and_acting_changes_no_statistics(pendulum_run):
    run = pendulum_run("crossq", seed=3, policy_delay=3)
    try:
        algo, timer = run.algo, Timer(run.device)
        while algo.updates == 0:
            algo.learn(run.source.next_batch(timer), timer)
        sample = algo.replay.sample(8, torch.Generator().manual_seed(0))
        while algo.updates % 3 != 0:
            algo.update(sample, timer)
        actor = [p.detach().clone() for p in algo.agent.actor.parameters()]
        terms = algo.update(sample, timer)
        assert "loss/actor" not in terms
        assert all(torch.equal(a, b) for a, b in zip(actor, algo.agent.actor.parameters()))
        algo.update(sample, timer)
        terms = algo.update(sample, timer)
        assert "loss/actor" in terms and algo.updates % 3 == 0
        assert any(not torch.equal(a, b) for a, b in zip(actor, algo.agent.actor.parameters()))
        stats = {k: v.clone() for k, v in algo.agent.state_dict().items() if "running" in k}
        algo.act(torch.randn(4, 3), torch.Generator().manual_seed(1))
        algo.agent.actions(torch.randn(4, 3), deterministic=True, generator=torch.Generator())
        assert all(torch.equal(stats[k], v) for k, v in algo.agent.state_dict().items() if "running" in k)
    finally:
        run.close()


@pytest.mark.parametrize("field", ["tau", "target_update_interval", "target"])
def test_target_network_keys_are_refused_saying_crossq_has_none(field):
    with pytest.raises(ConfigError) as info:
        validate_data(
            {
                "env": {"id": "Pendulum-v1"},
                "algo": {"name": "crossq", field: 1},
                "collector": {"frames_per_batch": 8, "total_frames": 1000},
            }
        )
    message = info.value.render()
    assert f"algo.{field}: crossq takes no {field}" in message and "no target network" in message


def test_batch_renorm_keeps_float32_statistics_under_bf16_autocast():
    """run.precision = "bf16" runs the networks under autocast: the layer normalizes in float32, as torch's
    own normalization layers do there, and its running statistics stay float32."""
    layer = BatchRenorm(4, members=2)
    linear = torch.nn.Linear(3, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16), learning(layer):
        out = layer(linear(torch.randn(2, 8, 3)))
    assert out.dtype == torch.float32 and layer.running_mean.dtype == torch.float32
    assert not torch.equal(layer.running_mean, torch.zeros_like(layer.running_mean))
