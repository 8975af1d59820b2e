"""The bench's team cases: MAPPO's loss beside its bare-torch floor, and the team collector beside raw VMAS."""

import pytest
import torch

from rlcli.bench.floors.teams import RAW_STEPS, RawVmas, bare_mappo_loss
from rlcli.bench.suites import components, learning
from rlcli.bench.suites.options import BenchOptions
from rlcli.config.load import load_config
from rlcli.run import build_run
from rlcli.timing import Timer
from support.teams import needs


@pytest.fixture
def quick(tmp_path):
    return BenchOptions(device=torch.device("cpu"), quick=True, compile=False, scratch=tmp_path)


def balance(tmp_path, *extra: str):
    needs("vmas")
    overrides = [f'run.output_dir="{tmp_path}"', 'run.device="cpu"', "env.num_envs=4", "collector.frames_per_batch=400"]
    return load_config("mappo_vmas_balance", [*overrides, "algo.minibatch_size=160", *extra])


def test_the_bare_mappo_floor_computes_mappos_own_loss(tmp_path):
    cfg = balance(tmp_path)
    run = build_run(cfg)
    try:
        batch = run.source.next_batch(Timer(run.device))
    finally:
        run.close()
    algo = run.algo
    minibatch = algo.ingest_and_sample(batch, 160, torch.Generator().manual_seed(0))
    (group,) = algo.learners
    learner = algo.learners[group]
    # Some agents' rows are live and the critic reads more than the policy.
    rows = minibatch.get(group)
    assert rows["input", "critic"].shape[-1] > rows["input", "observation"].shape[-1]
    ours = algo.loss(minibatch)["loss/total"]
    floor = bare_mappo_loss(learner.agent, rows, learner.clip_epsilon, cfg.algo.value_coef, cfg.algo.entropy_coef)
    torch.testing.assert_close(floor, ours, rtol=1e-5, atol=1e-6)
    # And their gradients agree.
    params = list(learner.agent.parameters())
    ours_grad = torch.autograd.grad(ours, params, allow_unused=True)
    floor_grad = torch.autograd.grad(
        bare_mappo_loss(learner.agent, rows, learner.clip_epsilon, cfg.algo.value_coef, cfg.algo.entropy_coef),
        params,
        allow_unused=True,
    )
    for a, b in zip(ours_grad, floor_grad):
        if a is not None and b is not None:
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_the_loss_suite_times_each_mappo_preset_at_its_minibatch_beside_the_floor(quick, monkeypatch, tmp_path):
    cfg = balance(tmp_path)
    monkeypatch.setattr(learning, "algorithm_presets", lambda opts, *extra: {})
    monkeypatch.setattr(
        learning, "preset_configs", lambda opts, *extra, teams=None: {"mappo_vmas_balance": cfg} if teams else {}
    )
    cases, ratios = learning.loss_suite(quick)
    names = {case.name: case for case in cases}
    assert set(names) == {"mappo.forward", "mappo.forward_backward", "mappo.bare_torch_forward_backward"}
    assert all(case.params["batch"] == 160 for case in cases)
    assert [r.name for r in ratios] == ["mappo.slowdown_vs_bare_torch"]
    for case in cases:
        case.run()


def test_raw_vmas_steps_its_random_actions_through_episode_ends():
    needs("vmas")
    raw = RawVmas("balance", 3, {"n_agents": 2}, max_steps=5, seed=0)
    raw.open()
    try:
        assert len(raw.actions) == RAW_STEPS and len(raw.actions[0]) == 2
        assert raw.actions[0][0].shape == (3, 2) and raw.actions[0][0].abs().max() <= 1
        before = raw.env.steps.clone()
        raw.run()
        # Eight steps with episodes of at most five: every env reset once and went on stepping.
        assert int(before.max()) == 0 and int(raw.env.steps.max()) <= 5
        assert int(raw.env.steps.min()) >= RAW_STEPS - 5
    finally:
        raw.close()
    assert raw.env is None


def test_the_collector_suite_sets_the_team_collector_beside_raw_vmas_on_the_same_steps(quick, monkeypatch, tmp_path):
    cfg = balance(tmp_path)
    monkeypatch.setattr(components, "TEAM_ENVS", 6)
    monkeypatch.setattr(
        components, "preset_configs", lambda opts, *extra, teams=None: {"mappo_vmas_balance": cfg} if teams else {}
    )
    cases, ratios = components.collector_suite(quick)
    try:
        assert [case.name for case in cases] == ["teams", "teams.raw_vmas"]
        assert all(case.params == {"env": "vmas/balance", "num_envs": 6} for case in cases)
        assert all(case.work == 6 * RAW_STEPS for case in cases)
        (ratio,) = ratios
        assert (ratio.name, ratio.numerator, ratio.denominator) == (
            "teams.share_of_raw_vmas",
            cases[0].key,
            cases[1].key,
        )
        ours, raw = cases
        raw_vmas = raw.run.__self__  # the RawVmas the case steps
        ours.open()
        raw.open()
        batch = ours.run()
        assert batch.batch_size == torch.Size([RAW_STEPS, 6])
        # The same random actions from the same start: the collector's batch is what raw VMAS steps through.
        first = torch.stack([agent.state.pos for agent in raw_vmas.env.agents], 1)
        for t, drawn in enumerate(raw_vmas.actions):
            torch.testing.assert_close(batch["agent", "action"][t], torch.stack(drawn, 1))
        raw.run()
        torch.testing.assert_close(batch["agent", "observation"][0, :, :, :2], first)
        torch.testing.assert_close(
            batch["agent", "next_observation"][-1],
            torch.stack(
                raw_vmas.env.get_from_scenario(
                    get_observations=True, get_rewards=False, get_infos=False, get_dones=False
                )[0],
                1,
            ),
        )
    finally:
        for case in cases:
            case.close()
