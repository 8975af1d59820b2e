"""The trainer's shared state on its own: the row columns fixed before the first row, the error
that stops training, frames per second, the snapshot of the last finite weights, and the check
for non-finite weights."""

import math

import pytest
import torch
from torch import nn

from rlcli.run import build_run
from rlcli.timing import Timer
from rlcli.trainer.state import BASE_COLUMNS, EVAL_COLUMNS, TrainState, WeightsSnapshot, columns, weights_finite
from rlcli.training_error import TrainingError
from support.configs import small_config


@pytest.mark.parametrize("evaluated", [False, True], ids=["no-eval", "eval"])
def test_columns_are_base_eval_metrics_then_one_timing_column_per_phase(tmp_path, evaluated):
    sections = {"eval": {"every_frames": 128, "episodes": 1}} if evaluated else {}
    run = build_run(small_config(tmp_path, **sections))
    try:
        got = columns(run)
    finally:
        run.close()
    timing = [f"time/{phase}_ms" for phase in run.phases]
    assert got == [*BASE_COLUMNS, *(EVAL_COLUMNS if evaluated else ()), *run.metrics, *timing]
    assert got[:4] == ["iteration", "frames", "wall_time_s", "fps"]
    assert "loss/policy" in got and "time/collect_ms" in got and "time/update.backward_ms" in got
    assert len(set(got)) == len(got)


def test_columns_of_an_off_policy_run_hold_its_late_terms_from_the_start(tmp_path):
    run = build_run(small_config(tmp_path, algo={"name": "dqn", "learning_starts": 64, "batch_size": 16}))
    try:
        got = columns(run)
    finally:
        run.close()
    # Reported only once learning starts, but a column from the first row on.
    assert set(run.metrics) <= set(got) and "loss/q" in got and "loss/policy" not in got


def test_training_error_names_the_iteration_term_and_value():
    error = TrainingError(7, "loss/value", math.nan)
    assert (error.iteration, error.term) == (7, "loss/value") and math.isnan(error.value)
    assert str(error) == (
        "iteration 7: loss/value is nan; training stopped (final.pt holds the weights of the iteration before)"
    )
    assert "is inf" in str(TrainingError(1, "loss/q", math.inf))


def test_fps_is_frames_over_wall_time_and_zero_before_any_time(tmp_path):
    run = build_run(small_config(tmp_path))
    try:
        state = TrainState(run=run, run_dir=tmp_path, timer=Timer(run.device))
        assert state.fps == 0.0
        state.frames, state.wall_time = 1536, 0.75
        assert state.fps == 2048.0
        state.frames, state.wall_time = 64, 0.0
        assert state.fps == 0.0
    finally:
        run.close()


def agent() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


def train_a_little(module: nn.Module) -> None:
    # A forward in train mode moves BatchNorm's buffers; the step moves the parameters.
    module(torch.randn(8, 3)).square().sum().backward()
    with torch.no_grad():
        for p in module.parameters():
            p -= 0.1 * p.grad


def test_a_snapshot_holds_a_copy_of_parameters_and_buffers():
    net = agent()
    snapshot = WeightsSnapshot(net)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    assert set(snapshot.saved) == set(before) and "1.running_mean" in snapshot.saved
    train_a_little(net)
    assert all(torch.equal(snapshot.saved[k], before[k]) for k in before)
    assert not torch.equal(net.state_dict()["0.weight"], before["0.weight"])


def test_take_refreshes_the_snapshot_in_place():
    net = agent()
    snapshot = WeightsSnapshot(net)
    tensors = {k: (v, v.data_ptr()) for k, v in snapshot.saved.items()}
    train_a_little(net)
    snapshot.take()
    for name, value in net.state_dict().items():
        held, pointer = tensors[name]
        assert snapshot.saved[name] is held and held.data_ptr() == pointer
        assert torch.equal(held, value)


def test_restore_brings_back_the_last_finite_weights():
    net = agent()
    snapshot = WeightsSnapshot(net)
    train_a_little(net)
    snapshot.take()
    good = {k: v.clone() for k, v in net.state_dict().items()}
    train_a_little(net)
    with torch.no_grad():
        net[0].weight[0, 0] = math.nan
        net[1].running_var.fill_(math.inf)
    assert not weights_finite(net)
    snapshot.restore()
    assert weights_finite(net)
    for name, value in net.state_dict().items():
        assert torch.equal(value, good[name]), name


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_weights_finite_finds_a_single_bad_parameter(bad):
    net = agent()
    assert weights_finite(net)
    with torch.no_grad():
        net[2].bias[1] = bad
    assert not weights_finite(net)
