"""QR-DQN: the quantile Huber loss and the loss of a minibatch against plain loops, the target's
action choice, masks, and the configs it refuses."""

import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rlcli import keys
from rlcli.algos.dqn import QAgent
from rlcli.algos.qrdqn import QuantileQ, qrdqn_loss
from rlcli.config.errors import ConfigError
from rlcli.config.load import validate_data
from rlcli.learning.quantiles import midpoints, quantile_huber, quantile_huber_pairs
from rlcli.models.normalization import ObservationNormalizer
from rlcli.run import build_run
from support.quantiles import plain_quantile_huber

ACTIONS, QUANTILES, OBS = 3, 4, 2


def test_quantile_huber_matches_the_papers_formula_pair_by_pair():
    g = torch.Generator().manual_seed(0)
    current, target = torch.randn(5, 3, generator=g) * 2, torch.randn(5, 7, generator=g) * 2
    out = quantile_huber_pairs(current, target)
    assert out.shape == (5, 3, 7)
    for row in range(5):
        expected = torch.tensor(plain_quantile_huber(current[row].tolist(), target[row].tolist()))
        torch.testing.assert_close(out[row], expected)
    torch.testing.assert_close(midpoints(4), torch.tensor([0.125, 0.375, 0.625, 0.875]))


@pytest.mark.parametrize(
    ("sets", "count", "targets", "scale"), [(1, 10, 10, 1.0), (2, 25, 46, 300.0), (1, 40, 170, 3.0)]
)
def test_the_prefix_sum_loss_and_its_gradient_equal_the_pairs(sets, count, targets, scale):
    """Below and above SORTED_FROM targets, with returns far from 0 (Pendulum's hundreds): the same values
    and gradients as the pair by pair form, with ties and targets at exactly +-1 from an estimate."""
    g = torch.Generator().manual_seed(3)
    current = (torch.randn(16, sets, count, generator=g) * scale).requires_grad_()
    target = torch.randn(16, targets, generator=g) * scale - 2 * scale
    target[:, :4] = current.detach()[:, 0, :4] + torch.tensor([1.0, -1.0, 0.0, 0.5])
    target[:, 4] = target[:, 5]
    ours = quantile_huber(current, target)
    pairs = quantile_huber_pairs(current, target.unsqueeze(1)).mean(-1)
    torch.testing.assert_close(ours, pairs, rtol=1e-5, atol=1e-5 * scale)
    weights = torch.rand(ours.shape, generator=g)
    (ours_grad,) = torch.autograd.grad((weights * ours).sum(), current)
    (pairs_grad,) = torch.autograd.grad((weights * pairs).sum(), current)
    torch.testing.assert_close(ours_grad, pairs_grad, rtol=1e-5, atol=1e-6)


def test_quantile_regression_converges_to_the_targets_quantiles():
    """Minimising the loss against samples of a known distribution finds its quantiles at the midpoints
    (up to the Huber region of +-1, small beside a spread of 100)."""
    g = torch.Generator().manual_seed(1)
    samples = torch.rand(1, 4000, generator=g) * 100
    theta = torch.zeros(1, 1, 5, requires_grad=True)
    optimizer = torch.optim.Adam([theta], lr=0.5)
    for _ in range(1000):
        optimizer.zero_grad()
        quantile_huber(theta, samples).sum().backward()
        optimizer.step()
    torch.testing.assert_close(theta.detach().view(5), torch.quantile(samples[0], midpoints(5)), atol=0.6, rtol=0)


def random_agent(seed: int) -> QAgent:
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(OBS, 8), nn.Tanh(), nn.Linear(8, ACTIONS * QUANTILES))
    agent = QAgent(
        ObservationNormalizer((OBS,), enabled=False, clip=10.0),
        QuantileQ(net, ACTIONS, QUANTILES),
        num_actions=ACTIONS,
        epsilon_end=0.0,
    )
    # A target unlike the online network, so that the two action choices differ.
    with torch.no_grad():
        for param in agent.target.parameters():
            param.add_(torch.randn_like(param))
    return agent


def random_batch(size: int = 6, **extra) -> TensorDict:
    g = torch.Generator().manual_seed(2)
    data = {
        keys.INPUT: torch.randn(size, OBS, generator=g),
        keys.ACTION: torch.randint(ACTIONS, (size,), generator=g),
        keys.REWARD: torch.randn(size, generator=g),
        keys.NEXT_INPUT: torch.randn(size, OBS, generator=g),
        keys.TERMINATED: torch.arange(size) % 3 == 1,
        keys.TRUNCATED: torch.arange(size) % 3 == 2,
    }
    return TensorDict({**data, **extra}, batch_size=[size])


def plain_loss(agent: QAgent, batch: TensorDict, *, gamma: float, double: bool) -> tuple[float, list[float]]:
    """The loss of each row written as a loop: pick a', build the N targets, sum_i mean_j rho."""
    rows, tds = [], []
    weight = batch.get(keys.WEIGHT, torch.ones(batch.batch_size[0]))
    discount = batch.get(keys.DISCOUNT, torch.full((batch.batch_size[0],), gamma))
    mask = batch.get(keys.NEXT_ACTION_MASK, torch.ones(batch.batch_size[0], ACTIONS, dtype=torch.bool))
    with torch.no_grad():
        for b in range(batch.batch_size[0]):
            theta = agent.q.quantiles(batch[keys.INPUT][b : b + 1])[0, int(batch[keys.ACTION][b])]
            next_target = agent.target.quantiles(batch[keys.NEXT_INPUT][b : b + 1])[0]
            chooser = agent.q.quantiles(batch[keys.NEXT_INPUT][b : b + 1])[0] if double else next_target
            means = [float(chooser[a].mean()) if mask[b, a] else float("-inf") for a in range(ACTIONS)]
            best = max(range(ACTIONS), key=lambda a: means[a])
            alive = 0.0 if batch[keys.TERMINATED][b] else 1.0
            target = [float(batch[keys.REWARD][b]) + float(discount[b]) * alive * float(v) for v in next_target[best]]
            pairs = plain_quantile_huber(theta.tolist(), target)
            rows.append(float(weight[b]) * sum(sum(row) / len(row) for row in pairs))
            tds.append(abs(float(theta.mean()) - sum(target) / len(target)))
    return sum(rows) / len(rows), tds


@pytest.mark.parametrize("double", [False, True])
def test_loss_matches_a_plain_loop_with_terminations_truncations_n_step_and_weights(double):
    agent = random_agent(0)
    size = 6
    g = torch.Generator().manual_seed(5)
    batch = random_batch(
        size,
        **{keys.DISCOUNT: torch.rand(size, generator=g), keys.WEIGHT: torch.rand(size, generator=g) + 0.5},
    )
    terms = qrdqn_loss(agent, batch, gamma=0.9, double=double)
    loss, tds = plain_loss(agent, batch, gamma=0.9, double=double)
    assert float(terms["loss/q"].detach()) == pytest.approx(loss, rel=1e-5)
    torch.testing.assert_close(terms["td_error"], torch.tensor(tds), rtol=1e-5, atol=1e-6)


def test_double_and_plain_targets_differ_and_masks_restrict_the_next_action():
    agent = random_agent(0)
    batch = random_batch()
    plain = qrdqn_loss(agent, batch, gamma=0.9, double=False)["loss/q"]
    double = qrdqn_loss(agent, batch, gamma=0.9, double=True)["loss/q"]
    assert float(plain.detach()) != pytest.approx(float(double.detach()))
    mask = torch.zeros(6, ACTIONS, dtype=torch.bool)
    mask[:, 2] = True
    masked = random_batch(**{keys.NEXT_ACTION_MASK: mask})
    loss, _ = plain_loss(agent, masked, gamma=0.9, double=False)
    assert float(qrdqn_loss(agent, masked, gamma=0.9, double=False)["loss/q"].detach()) == pytest.approx(loss, rel=1e-5)


def test_gradient_reaches_only_the_online_network_and_actions_take_the_best_quantile_mean():
    agent = random_agent(0)
    qrdqn_loss(agent, random_batch(), gamma=0.9, double=True)["loss/q"].backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in agent.q.parameters())
    assert all(p.grad is None for p in agent.target.parameters())
    obs = torch.randn(10, OBS)
    greedy = agent.actions(obs, deterministic=True, generator=torch.Generator())
    torch.testing.assert_close(greedy, agent.q.quantiles(obs).mean(-1).argmax(-1))


def qrdqn_config(env_id: str = "CartPole-v1", **algo):
    return validate_data(
        {
            "run": {"device": "cpu"},
            "env": {"id": env_id, "num_envs": 2, "vectorization": "sync"},
            "network": {"hidden_sizes": [16]},
            "algo": {"name": "qrdqn", "batch_size": 8, "learning_starts": 16, "replay": {"capacity": 100}, **algo},
            "collector": {"frames_per_batch": 8, "total_frames": 64},
        }
    )


def test_a_run_builds_a_network_of_actions_times_quantiles_outputs():
    run = build_run(qrdqn_config(quantiles=7))
    try:
        q = run.algo.agent.q
        assert q.quantiles(torch.zeros(3, 4)).shape == (3, 2, 7)
        assert q(torch.zeros(3, 4)).shape == (3, 2)
    finally:
        run.close()


def test_box_actions_are_refused_naming_the_algorithms_that_take_them():
    with pytest.raises(ConfigError) as info:
        build_run(qrdqn_config("Pendulum-v1"))
    message = info.value.render()
    assert "qrdqn does not support" in message and "algo.name" in message
    serving = message.split("with such actions:")[-1].replace(",", " ").split()
    assert {"ppo", "sac", "tqc"} <= set(serving) and "qrdqn" not in serving and "dqn" not in serving


@pytest.mark.parametrize("quantiles", [0, -3])
def test_quantiles_below_one_are_refused(quantiles):
    with pytest.raises(ConfigError) as info:
        qrdqn_config(quantiles=quantiles)
    message = info.value.render()
    assert "algo.quantiles" in message and "1" in message
