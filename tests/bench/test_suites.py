import pytest
import torch

from rlcli.algos import ALGORITHMS
from rlcli.bench.floors import gae_loop
from rlcli.bench.measure import Case, measure
from rlcli.bench.suites import SUITES, BenchOptions
from rlcli.advantages import gae

@pytest.fixture
def quick(tmp_path):
    return BenchOptions(device=torch.device("cpu"), quick=True, compile=False, scratch=tmp_path)


def test_loss_cases_call_their_own_algorithm(quick):
    cases, ratios = SUITES["loss"](quick)
    try:
        names = {case.name.split(".")[0] for case in cases}
        assert set(ALGORITHMS) <= names
        for case in cases:
            if case.name.endswith(".forward"):
                terms = case.run()
                assert "loss/total" in terms, case.key
                # PPO's loss reports its KL estimate; the others have none.
                assert ("stats/approx_kl" in terms) == case.name.startswith("ppo"), case.key
                # Q-learning losses report their Q-values; the policy-gradient ones (PPO, A2C, REINFORCE) and
                # behaviour cloning's have none.
                assert ("stats/q_mean" in terms) != case.name.startswith(("ppo", "a2c", "reinforce", "bc")), case.key
        assert {r.name for r in ratios} == {"ppo.slowdown_vs_bare_torch"}
    finally:
        for case in cases:
            case.close()


def test_the_baseline_loop_computes_the_same_advantages():
    g = torch.Generator().manual_seed(0)
    data = [torch.randn(64, 3, generator=g) for _ in range(3)]
    done = [torch.rand(64, 3, generator=g) < p for p in (0.1, 0.05)]
    fast, _ = gae(*data, *done, gamma=0.99, lam=0.9)
    slow, _ = gae_loop(*data, *done, gamma=0.99, lam=0.9)
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-5)


def test_measure_reports_work_per_second_with_its_spread():
    calls = []
    case = Case("unit", "count", {"n": 1}, "calls/s", 10, lambda: calls.append(1))
    result = measure(case, repeat=3, min_seconds=0.001, device=torch.device("cpu"))
    assert result.key == "unit/count[n=1]"
    assert result.min <= result.median <= result.max
    assert result.median > 0 and len(calls) >= 4


def test_cli_help_names_every_suite():
    import typing

    from rlcli.cli import bench as cli

    option = typing.get_type_hints(cli.bench, include_extras=True)["suite"].__metadata__[0]
    for name in SUITES:
        assert name in option.help


def test_update_cases_run_learn_past_the_warm_up_for_every_preset(quick):
    cases, _ = SUITES["update"](quick)
    try:
        names = {case.name for case in cases}
        assert {"ppo_cartpole", "dqn_cartpole"} <= names
        # A unit --compare does not know makes the report unreadable as a baseline.
        from rlcli.bench import UNITS

        assert {case.unit for case in cases} <= set(UNITS)
        for case in cases:
            # Each case runs a whole learn; off-policy ones are past their warm-up, so they step.
            case.run()
    finally:
        for case in cases:
            case.close()
    dqn = next(case for case in cases if case.name == "dqn_cartpole")
    algo = dqn.run.__defaults__[0]
    assert algo.updates > 0


def test_buffer_cases_cover_extend_samples_and_priorities_beside_the_floor(quick):
    cases, ratios = SUITES["buffer"](quick)
    try:
        names = [case.name for case in cases]
        assert names == ["extend", "bare_torch_sample", "sample_uniform", "sample_prioritized", "update_priorities"]
        sample = cases[2].run()
        assert sample.batch_size == torch.Size([256]) and sample["observation"].shape == (256, 17)
        assert "weight" in cases[3].run().keys()
    finally:
        for case in cases:
            case.close()
    assert ratios[0].numerator == cases[1].key and ratios[0].denominator == cases[2].key


def test_offpolicy_cases_time_the_sac_update_beside_its_floor_and_ensembles_by_size(quick):
    cases, ratios = SUITES["offpolicy"](quick)
    try:
        names = [(case.name, case.params.get("E"), case.params.get("hidden")) for case in cases]
        assert names[:2] == [("sac.update", None, "256x256"), ("sac.bare_torch_update", None, "256x256")]
        assert ("critic_ensemble", 10, 256) in names and ("critic_python_loop", 10, 64) in names
        algo = next(c.cell_contents for c in cases[0].run.__closure__ if hasattr(c.cell_contents, "agent"))
        updates = algo.updates
        for case in cases:
            case.run()
        # The library's case runs SAC's own gradient step.
        assert algo.updates == updates + 1
    finally:
        for case in cases:
            case.close()
    assert {r.name for r in ratios} == {"sac.update.slowdown_vs_bare_torch", "critic_ensemble.E10_vs_E2",
                                        "critic_python_loop.E10_vs_ensemble_E2", "iql.update.slowdown_vs_bare_torch",
                                        "cql.update.slowdown_vs_bare_torch"}


def test_offline_update_cases_run_their_own_algorithm_beside_its_floor(quick):
    from rlcli.bench.offline import offline_updates

    cases, ratios = offline_updates(quick)
    try:
        assert [case.name for case in cases] == ["cql.update", "cql.bare_torch_update", "iql.update",
                                                 "iql.bare_torch_update"]
        for update in (cases[0], cases[2]):
            algo = update.run.__defaults__[0]
            before = [p.detach().clone() for p in algo.agent.parameters()]
            terms = update.run()
            assert "loss/critic" in terms and "loss/actor" in terms
            assert any(not torch.equal(a, b) for a, b in zip(before, algo.agent.parameters()))
        for floor in (cases[1], cases[3]):
            floor.run()
    finally:
        for case in cases:
            case.close()
    assert [r.name for r in ratios] == ["cql.update.slowdown_vs_bare_torch", "iql.update.slowdown_vs_bare_torch"]


def test_the_torch_free_suite_names_match_the_suites():
    from rlcli.bench import SUITE_NAMES
    from rlcli.bench.suites import SUITES

    assert tuple(SUITES) == SUITE_NAMES
