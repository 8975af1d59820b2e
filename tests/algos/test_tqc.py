"""TQC: the truncated pooled target and the quantile critics' loss against plain loops, the actor's
objective over every quantile, and the configs it refuses."""

import pytest
import torch

from rlcli import keys
from rlcli.algos.sac import sac_actor_loss
from rlcli.algos.tqc import tqc_critic_loss, truncated_target
from rlcli.config.errors import ConfigError
from rlcli.config.load import validate_data
from support.quantiles import plain_quantile_huber


def test_truncated_target_pools_every_critic_and_keeps_the_smallest():
    next_quantiles = torch.tensor([[[1.0, 5.0, 9.0]], [[2.0, 3.0, 10.0]]])  # [E=2, B=1, N=3]
    torch.testing.assert_close(truncated_target(next_quantiles, 4), torch.tensor([[1.0, 2.0, 3.0, 5.0]]))


def test_critic_loss_matches_a_plain_loop(pendulum_run, minibatch, critic_member):
    run = pendulum_run("tqc", seed=4, num_critics=3, quantiles=5, top_quantiles_to_drop_per_net=2)
    run.close()
    agent, cfg = run.algo.agent, run.algo.cfg
    g = torch.Generator().manual_seed(9)
    batch = minibatch(6)
    batch[keys.WEIGHT] = torch.rand(6, generator=g) + 0.5
    alpha = torch.tensor(0.25)
    with torch.no_grad():
        next_action, next_log_prob = agent.actor(batch[keys.NEXT_INPUT], torch.Generator().manual_seed(5))
    terms = tqc_critic_loss(
        agent, batch, next_action, next_log_prob, gamma=0.9, alpha=alpha, subset=None, kept=cfg.kept_quantiles
    )
    assert cfg.kept_quantiles == 3 * (5 - 2)
    total, distances = 0.0, []
    with torch.no_grad():
        for b in range(6):
            row = slice(b, b + 1)
            pooled = sorted(
                float(z)
                for e in range(3)
                for z in critic_member(agent.critic_target, e, batch[keys.NEXT_INPUT][row], next_action[row])[0]
            )[:9]
            alive = 0.0 if batch[keys.TERMINATED][b] else 1.0
            target = [float(batch[keys.REWARD][b]) + 0.9 * alive * (z - 0.25 * float(next_log_prob[b])) for z in pooled]
            critics = [
                critic_member(agent.critic, e, batch[keys.INPUT][row], batch[keys.ACTION][row])[0].tolist()
                for e in range(3)
            ]
            pairs = [value for theta in critics for line in plain_quantile_huber(theta, target) for value in line]
            total += float(batch[keys.WEIGHT][b]) * sum(pairs) / len(pairs)
            mean_target = sum(target) / len(target)
            distances.append(sum(abs(sum(theta) / 5 - mean_target) for theta in critics) / 3)
    assert float(terms["loss/critic"].detach()) == pytest.approx(total / 6, rel=1e-5)
    torch.testing.assert_close(terms["td_error"], torch.tensor(distances), rtol=1e-5, atol=1e-6)


def test_the_actor_maximises_the_mean_over_every_critics_quantiles(pendulum_run, minibatch, critic_member):
    run = pendulum_run("tqc", seed=4, quantiles=4)
    run.close()
    agent, batch = run.algo.agent, minibatch()
    assert run.algo.critics.actor_q == "mean" and run.algo.critics.subset is None
    action, log_prob = agent.actor(batch[keys.INPUT], torch.Generator().manual_seed(3))
    terms = sac_actor_loss(agent, batch, action, log_prob, alpha=torch.tensor(0.2), actor_q="mean", target_entropy=-1)
    with torch.no_grad():
        q = torch.stack([critic_member(agent.critic, e, batch[keys.INPUT], action) for e in range(2)])  # [E, B, N]
    torch.testing.assert_close(terms["loss/actor"], (0.2 * log_prob - q.mean((0, 2))).mean())
    terms["loss/actor"].backward()
    assert all(p.grad is None for p in agent.critic.parameters())


def tqc_config(**algo):
    return validate_data(
        {
            "env": {"id": "Pendulum-v1"},
            "algo": {"name": "tqc", **algo},
            "collector": {"frames_per_batch": 8, "total_frames": 1000},
        }
    )


def test_dropping_every_quantile_is_refused_naming_the_largest_allowed():
    with pytest.raises(ConfigError) as info:
        tqc_config(quantiles=5, num_critics=3, top_quantiles_to_drop_per_net=5)
    message = info.value.render()
    assert "algo.top_quantiles_to_drop_per_net" in message
    assert "largest allowed is 4" in message and "15 of the 3 x 5" in message
    assert tqc_config(quantiles=5, num_critics=3, top_quantiles_to_drop_per_net=4).algo.kept_quantiles == 3


@pytest.mark.parametrize(("field", "value"), [("quantiles", 0), ("top_quantiles_to_drop_per_net", -1)])
def test_quantile_counts_out_of_range_are_refused(field, value):
    with pytest.raises(ConfigError) as info:
        tqc_config(**{field: value})
    assert f"algo.{field}" in info.value.render()


@pytest.mark.parametrize(("field", "value"), [("critic_subset", 1), ("actor_q", "min")])
def test_critic_subset_and_actor_q_are_not_fields(field, value):
    assert not hasattr(tqc_config().algo, field)
    with pytest.raises(ConfigError) as info:
        tqc_config(**{field: value})
    assert f"algo.{field}" in info.value.render()
