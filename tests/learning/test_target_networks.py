import copy

import pytest
import torch
from torch import nn

from rlcli.learning.target_networks import TargetSchedule, hard_update, soft_update


def linear(weight: list[list[float]], bias: list[float]) -> nn.Linear:
    """A 2 -> 2 linear layer with the given parameters."""
    layer = nn.Linear(2, 2)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight))
        layer.bias.copy_(torch.tensor(bias))
    return layer


def pair() -> tuple[nn.Linear, nn.Linear]:
    """(target, source) with parameters chosen so that tau 0.25 gives exact binary fractions."""
    target = linear([[1.0, 2.0], [3.0, 4.0]], [0.0, 4.0])
    source = linear([[5.0, 6.0], [7.0, 8.0]], [8.0, 0.0])
    return target, source


def params(module: nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def test_soft_update_matches_hand_computed_values():
    target, source = pair()
    source_before = params(source)
    soft_update(target, source, 0.25)
    # 0.75 * target + 0.25 * source
    assert target.weight.tolist() == [[2.0, 3.0], [4.0, 5.0]]
    assert target.bias.tolist() == [2.0, 3.0]
    soft_update(target, source, 0.25)
    assert target.weight.tolist() == [[2.75, 3.75], [4.75, 5.75]]
    assert target.bias.tolist() == [3.5, 2.25]
    for before, after in zip(source_before, source.parameters(), strict=True):
        assert torch.equal(before, after)


def test_soft_update_small_tau_on_random_parameters():
    generator = torch.Generator().manual_seed(0)
    target, source = nn.Linear(3, 4), nn.Linear(3, 4)
    with torch.no_grad():
        for p in [*target.parameters(), *source.parameters()]:
            p.copy_(torch.randn(p.shape, generator=generator))
    expected = [0.995 * t + 0.005 * s for t, s in zip(params(target), params(source), strict=True)]
    soft_update(target, source, 0.005)
    for want, got in zip(expected, target.parameters(), strict=True):
        torch.testing.assert_close(got.detach(), want)


def test_soft_update_leaves_no_graph_and_keeps_the_parameters():
    target, source = pair()
    weight = target.weight
    soft_update(target, source, 0.25)
    assert target.weight is weight  # in place: an optimizer holding it still sees it
    assert target.weight.grad_fn is None and target.weight.grad is None
    assert target.weight.requires_grad


def test_tau_one_is_a_copy():
    target, source = pair()
    soft_update(target, source, 1.0)
    for t, s in zip(target.parameters(), source.parameters(), strict=True):
        assert torch.equal(t, s)
        assert t.data_ptr() != s.data_ptr()  # copied, not shared
    with torch.no_grad():
        source.weight.add_(1.0)
    assert not torch.equal(target.weight, source.weight)


def test_tau_zero_changes_nothing():
    target, source = pair()
    before = params(target)
    soft_update(target, source, 0.0)
    for b, t in zip(before, target.parameters(), strict=True):
        assert torch.equal(b, t)


def test_hard_update_copies_and_leaves_the_source_unchanged():
    target, source = pair()
    source_before = params(source)
    hard_update(target, source)
    assert target.weight.tolist() == [[5.0, 6.0], [7.0, 8.0]]
    assert target.bias.tolist() == [8.0, 0.0]
    for before, after in zip(source_before, source.parameters(), strict=True):
        assert torch.equal(before, after)


def test_updates_cover_every_parameter_of_a_deeper_network():
    generator = torch.Generator().manual_seed(1)

    def net() -> nn.Sequential:
        module = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
        with torch.no_grad():
            for p in module.parameters():
                p.copy_(torch.randn(p.shape, generator=generator))
        return module

    target, source = net(), net()
    hard_update(target, source)
    for (name, t), s in zip(target.named_parameters(), source.parameters(), strict=True):
        assert torch.equal(t, s), name


@pytest.mark.parametrize("interval", [1, 3, 5])
def test_schedule_updates_exactly_every_interval_steps(interval):
    target, source = pair()
    schedule = TargetSchedule(target, source, tau=1.0, interval=interval)
    for step in range(1, 4 * interval + 1):
        # Move the source every step, so the target shows whether it was updated this step.
        with torch.no_grad():
            source.bias.fill_(float(step))
        before = target.bias.detach().clone()
        due = step % interval == 0
        assert schedule.step() is due, step
        if due:
            assert target.bias.tolist() == [float(step)] * 2
        else:
            assert torch.equal(target.bias, before)
    assert schedule.steps == 4 * interval


def test_schedule_applies_tau_when_due():
    target, source = pair()
    schedule = TargetSchedule(target, source, tau=0.25, interval=2)
    assert schedule.step() is False
    assert target.bias.tolist() == [0.0, 4.0]
    assert schedule.step() is True
    assert target.bias.tolist() == [2.0, 3.0]
    assert target.weight.tolist() == [[2.0, 3.0], [4.0, 5.0]]


def test_schedule_state_dict_round_trips():
    target, source = pair()
    schedule = TargetSchedule(target, source, tau=1.0, interval=4)
    for _ in range(6):
        schedule.step()
    state = schedule.state_dict()
    assert state == {"steps": 6}

    restored_target = copy.deepcopy(target)
    restored = TargetSchedule(restored_target, source, tau=1.0, interval=4)
    restored.load_state_dict(copy.deepcopy(state))
    assert restored.state_dict() == state
    # Both now update at steps 8 and 12, not at 4 steps after the restore.
    pattern = [schedule.step() for _ in range(6)]
    assert [restored.step() for _ in range(6)] == pattern == [False, True, False, False, False, True]
