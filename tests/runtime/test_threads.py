"""``run.threads``: the plan ``auto`` makes from the FLOPs it counts (against torch's own count of a real
gradient step), the threads each phase of a real run computes on, and a pinned count above the cores
refused at build."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from rlcli.config.errors import ConfigError
from rlcli.config.load import load_config, validate_data
from rlcli.run import build_run
from rlcli.runtime.cores import physical_cores
from rlcli.runtime.threads import ACT_FLOPS_PER_THREAD, UPDATE_FLOPS_PER_THREAD, ThreadPlan
from rlcli.timing import Timer
from rlcli.trainer.loop import train
from rlcli.trainer.state import Hooks


@pytest.fixture(autouse=True)
def torch_threads():
    """Restore torch's thread count, which a build and the loop set for this process."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def small(**sections) -> dict:
    return {
        "run": {"device": "cpu"},
        "env": {"id": "CartPole-v1", "num_envs": 4},
        "algo": {"name": "ppo", "minibatch_size": 32},
        "collector": {"frames_per_batch": 64, "total_frames": 256},
    } | sections


@pytest.mark.parametrize("preset", ["ppo_cartpole", "sac_pendulum", "dqn_cartpole", "a2c_cartpole"])
def test_the_estimated_gradient_step_is_within_a_factor_of_two_of_torchs_count(preset):
    cfg = load_config(preset, ["run.device=cpu"])
    run = build_run(cfg)
    try:
        batch = run.source.next_batch(Timer(run.device))
        rows = cfg.algo.update_batch or cfg.collector.frames_per_batch
        minibatch = run.algo.ingest_and_sample(batch, rows, torch.Generator().manual_seed(0))
        with FlopCounterMode(display=False) as counter:
            run.algo.loss(minibatch)["loss/total"].backward()
        counted = counter.get_total_flops()
        estimated = run.threads.update_flops
    finally:
        run.close()
    assert counted > 0 and 0.5 <= estimated / counted <= 2.0, (estimated, counted)


def test_auto_gives_a_phase_one_thread_per_share_of_its_flops_up_to_the_cores():
    cores = physical_cores()
    run = build_run(validate_data(small()))
    try:
        plan = run.threads
    finally:
        run.close()
    assert plan.setting == "auto" and plan.cores == cores
    # CartPole's 64x64 MLPs: a fraction of a share in either phase.
    assert plan.act_flops < ACT_FLOPS_PER_THREAD and plan.update_flops < UPDATE_FLOPS_PER_THREAD
    assert plan.act == plan.update == 1
    # The Nature CNN on 8 Atari frames: many shares, every core.
    pixels = build_run(load_config("ppo_breakout", ["run.device=cpu"]))
    try:
        big = pixels.threads
    finally:
        pixels.close()
    assert big.act_flops > 2 * ACT_FLOPS_PER_THREAD and big.update_flops > 2 * UPDATE_FLOPS_PER_THREAD
    assert big.act == big.update == min(cores, int(big.act_flops // ACT_FLOPS_PER_THREAD))
    assert "acting" in big.describe() and f"of {cores} cores" in big.describe()


def test_a_pinned_count_is_every_phases_and_the_loop_sets_each_phases_threads(tmp_path):
    run = build_run(validate_data(small(run={"device": "cpu", "threads": 1, "output_dir": str(tmp_path)})))
    assert (run.threads.act, run.threads.update, run.threads.describe()) == (1, 1, "threads 1 (run.threads)")
    # A plan with a thread count of its own for each phase: the loop switches between them.
    run.threads = ThreadPlan("auto", act=1, update=2, cores=2)
    seen: dict[str, set[int]] = {"collect": set(), "learn": set()}
    next_batch, learn = run.source.next_batch, run.algo.learn

    def collecting(timer):
        seen["collect"].add(torch.get_num_threads())
        return next_batch(timer)

    def learning(batch, timer):
        seen["learn"].add(torch.get_num_threads())
        return learn(batch, timer)

    run.source.next_batch, run.algo.learn = collecting, learning
    state = train(run, hooks=Hooks())
    assert state.status == "completed"
    assert seen == {"collect": {1}, "learn": {2}}


def test_a_pinned_count_above_the_cores_is_refused_naming_them():
    cores = physical_cores()
    with pytest.raises(ConfigError) as info:
        build_run(validate_data(small(run={"device": "cpu", "threads": cores + 1})), source="cfg.toml")
    (issue,) = info.value.issues
    assert issue.path == "run.threads"
    assert f"{cores + 1} threads" in issue.message and f"allowed: auto, or 1 to {cores}" in issue.message
