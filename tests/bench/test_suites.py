import pytest
import torch

from rlcli.algos import ALGORITHMS
from rlcli.bench import UNITS
from rlcli.bench.floors.policy_gradient import gae_loop
from rlcli.bench.measure import Case, measure
from rlcli.bench.suites import SUITES, learning, options
from rlcli.bench.suites.offline import offline_configs
from rlcli.bench.suites.options import BenchOptions
from rlcli.config.algos import TEAMS
from rlcli.config.load import load_config
from rlcli.config.presets import available_presets
from rlcli.envs import env_family
from rlcli.learning.advantages import gae


@pytest.fixture
def quick(tmp_path):
    return BenchOptions(device=torch.device("cpu"), quick=True, compile=False, scratch=tmp_path)


def check_loss_cases(cases, ratios) -> set[str]:
    """Run each loss case's forward and check the terms it reports; returns the algorithms timed."""
    try:
        for case in cases:
            if case.name.endswith(".forward"):
                terms = case.run()
                assert "loss/total" in terms, case.key
                # The named terms (a td_error for priorities aside) are among the METRICS of the algorithm the
                # case names, as its module declares them: the case times its own algorithm's loss.
                spec = ALGORITHMS[case.name.split(".")[0]]
                named = {t for t in terms if t.startswith(("loss/", "stats/"))}
                if spec.capabilities.teams:
                    # A team algorithm's terms are each group's, "<term>/<group>", beside the sum of their totals.
                    named = {t.rsplit("/", 1)[0] for t in named - {"loss/total"}} | {"loss/total"}
                assert named <= set(spec.metrics), case.key
        return {case.name.split(".")[0] for case in cases}
    finally:
        for case in cases:
            case.close()


# The loss suite a part at a time, each a few seconds: one algorithm's preset on vector observations per
# test (its batches of 256 and 4096), then the pixel presets; together they cover every algorithm of the table.
@pytest.fixture(scope="module")
def algorithm_presets(tmp_path_factory) -> dict:
    """The preset the loss suite takes for each algorithm (offline ones on stand-in datasets), chosen once."""
    opts = BenchOptions(device=torch.device("cpu"), quick=True, compile=False, scratch=tmp_path_factory.mktemp("bench"))
    return learning.algorithm_presets(opts, "collector.frames_per_batch=4096")


def test_the_loss_suite_takes_a_preset_for_every_algorithm(algorithm_presets):
    assert set(algorithm_presets) == set(ALGORITHMS)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_the_loss_cases_call_their_own_algorithm(quick, monkeypatch, algorithm_presets, algorithm):
    chosen = algorithm_presets
    monkeypatch.setattr(learning, "algorithm_presets", lambda opts, *extra: {algorithm: chosen[algorithm]})
    monkeypatch.setattr(learning, "preset_configs", lambda opts, *extra, **kw: {})
    cases, ratios = SUITES["loss"](quick)
    assert check_loss_cases(cases, ratios) == {algorithm}
    assert {r.name for r in ratios} == ({"ppo.slowdown_vs_bare_torch"} if algorithm == "ppo" else set())


def test_the_loss_cases_of_the_pixel_presets_time_their_cnn(quick, monkeypatch):
    monkeypatch.setattr(learning, "algorithm_presets", lambda opts, *extra: {})
    cases, ratios = SUITES["loss"](quick)
    pixel = {cfg.algo.name for cfg in options.preset_configs(quick).values() if env_family(cfg.env.id) is not None}
    if not pixel:
        pytest.skip("no pixel preset's env is installed (the atari extra)")
    # And the first 256-wide SAC preset, each again under bf16 where this CPU has bfloat16 arithmetic.
    fp32, bf16 = learning.bf16_presets(quick, "fp32"), learning.bf16_presets(quick, "bf16")
    # And each MAPPO preset at its own minibatch (the team cases).
    mappo = {cfg.algo.name for cfg in options.preset_configs(quick, teams=True).values() if cfg.algo.name == "mappo"}
    assert check_loss_cases(cases, ratios) == pixel | {cfg.algo.name for cfg in fp32 + bf16} | mappo
    # Each bf16 case beside its fp32 twin (algorithm_presets, which could time the SAC one, is empty here).
    speedups = {ratio.name for ratio in ratios if ratio.unit == "speedup"}
    assert speedups == {
        f"{cfg.algo.name}.{kind}.bf16_speedup" for cfg in bf16 for kind in ("forward", "forward_backward")
    }


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


# The online presets the update suite times (one pixel preset per algorithm), named at collection from
# their configs alone, so that each is a test of its own.
UPDATE_PRESETS = sorted(
    learning.one_pixel_preset_per_algorithm(
        {name: load_config(name) for name in available_presets() if not load_config(name).offline}
    )
)


def test_the_update_suite_times_the_cartpole_presets():
    assert {"ppo_cartpole", "dqn_cartpole"} <= set(UPDATE_PRESETS)


@pytest.mark.parametrize("preset", UPDATE_PRESETS)
def test_the_update_case_runs_learn_past_the_warm_up(quick, monkeypatch, preset):
    monkeypatch.setattr(options, "available_presets", lambda: [preset])
    if load_config(preset).algo.name in TEAMS:
        # A VMAS preset's learn is 45 passes over a batch of 6,000 frames (25 s): one pass over 1,200 runs the same code.
        load = options.load_config
        monkeypatch.setattr(
            options,
            "load_config",
            lambda name, sets=(): load(name, [*sets, "algo.epochs=1", "collector.frames_per_batch=1200"]),
        )
    monkeypatch.setattr(learning, "offline_iterations", lambda opts: [])
    cases, _ = SUITES["update"](quick)
    if not cases:
        pytest.skip(f"the env of {preset} needs an extra that is not installed")
    bf16 = [c for c in cases if c.params.get("precision") == "bf16"]
    try:
        (case,) = [c for c in cases if c not in bf16]
        assert case.name == preset
        # The CNN presets and the first 256-wide SAC one, again under bf16 where this CPU has it.
        assert [c.name for c in bf16] == [
            cfg.run.name for cfg in learning.bf16_presets(quick, "bf16") if cfg.run.name == preset
        ]
        # A unit --compare does not know makes the report unreadable as a baseline.
        assert case.unit in UNITS
        # The suite itself ran learn until it reported a loss (off-policy ones past their warm-up), and
        # raises where it never does; the timed closure is one more learn, run on the cheap presets.
        if preset in ("ppo_cartpole", "dqn_cartpole"):
            case.run()
    finally:
        for made in cases:
            made.close()
    if preset == "dqn_cartpole":
        assert case.run.__defaults__[0].updates > 0


def test_the_update_cases_of_the_offline_presets_run_a_whole_iteration(quick, monkeypatch):
    monkeypatch.setattr(options, "available_presets", lambda: [])
    cases, _ = SUITES["update"](quick)
    try:
        assert {case.name for case in cases} == set(offline_configs(quick)) != set()
        for case in cases:
            assert case.unit in UNITS
            case.run()
    finally:
        for case in cases:
            case.close()


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


def test_offpolicy_cases_time_each_replay_step_beside_its_floor_and_ensembles_by_size(quick):
    cases, ratios = SUITES["offpolicy"](quick)
    try:
        names = [(case.name, case.params.get("E"), case.params.get("hidden")) for case in cases]
        assert names[:2] == [("sac.update", None, "256x256"), ("sac.bare_torch_update", None, "256x256")]
        assert ("critic_ensemble", 10, 256) in names and ("critic_python_loop", 10, 64) in names
        for algo in ("qrdqn", "tqc", "crossq"):
            assert {f"{algo}.update", f"{algo}.bare_torch_update"} <= {name for name, _, _ in names}
        assert {"tqc.update_5_critics", "redq.update_5_critics"} <= {name for name, _, _ in names}
        algo = next(c.cell_contents for c in cases[0].run.__closure__ if hasattr(c.cell_contents, "agent"))
        updates = algo.updates
        for case in cases:
            case.run()
        # The library's case runs SAC's own gradient step.
        assert algo.updates == updates + 1
    finally:
        for case in cases:
            case.close()
    assert {r.name for r in ratios} == {
        "sac.update.slowdown_vs_bare_torch",
        "critic_ensemble.E10_vs_E2",
        "critic_python_loop.E10_vs_ensemble_E2",
        "iql.update.slowdown_vs_bare_torch",
        "cql.update.slowdown_vs_bare_torch",
        "qrdqn.update.slowdown_vs_bare_torch",
        "tqc.update.slowdown_vs_bare_torch",
        "crossq.update.slowdown_vs_bare_torch",
        "tqc.update_5_critics_vs_redq",
    }
    assert_contrib_keys_move_here(cases, ratios, {"qrdqn", "tqc", "crossq", "redq"})


def test_offline_update_cases_run_their_own_algorithm_beside_its_floor(quick):
    from rlcli.bench.suites.offline import offline_updates

    cases, ratios = offline_updates(quick)
    try:
        assert [case.name for case in cases] == [
            "cql.update",
            "cql.bare_torch_update",
            "iql.update",
            "iql.bare_torch_update",
        ]
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


def assert_contrib_keys_move_here(cases, ratios, algos: set[str]) -> None:
    """A baseline saved before issue 45 names the figures of ``algos`` contrib/...; each maps to its key here."""
    from rlcli.bench import moved_key

    keys = [case.key for case in cases] + [Case(r.suite, r.name, r.params, r.unit, 1, None).key for r in ratios]
    moved = [key for key in keys if key.split("/", 1)[1].split(".", 1)[0] in algos]
    assert {key.split("/", 1)[1].split(".", 1)[0] for key in moved} == algos
    for key in moved:
        assert moved_key("contrib/" + key.split("/", 1)[1]) == key
    assert all(moved_key(key) == key for key in keys)


def test_onpolicy_cases_time_trpos_update_beside_its_floor(quick):
    cases, ratios = SUITES["onpolicy"](quick)
    try:
        assert [case.name for case in cases] == ["trpo.update", "trpo.bare_torch_update"]
        for case in cases:
            case.run()
    finally:
        for case in cases:
            case.close()
    assert [r.name for r in ratios] == ["trpo.update.slowdown_vs_bare_torch"]
    assert_contrib_keys_move_here(cases, ratios, {"trpo"})


def test_export_cases_play_each_presets_policy_eager_and_from_both_files_with_the_same_actions(quick):
    cases, ratios = SUITES["export"](quick)
    by_key = {}
    for case in cases:
        by_key[(case.params["preset"], case.params["batch"], case.name)] = case.run()
    presets = {preset for preset, _, _ in by_key}
    assert {"ppo_cartpole", "sac_pendulum"} <= presets
    for (preset, rows, name), actions in by_key.items():
        eager = by_key[(preset, rows, "eager.actions")]
        played = actions[0] if isinstance(actions, list) else actions
        assert played.shape[0] == rows, (preset, rows, name)
        torch.testing.assert_close(played, eager, atol=1e-5, rtol=0)
    assert {r.name for r in ratios} == {"pt2.slowdown_vs_eager", "onnx.slowdown_vs_eager"}
    # The files sit in the bench's own scratch folder.
    assert (quick.scratch / "ppo_cartpole.onnx").is_file() and (quick.scratch / "sac_pendulum.pt2").is_file()


def _collector_cases(quick, monkeypatch, tmp_path, preset: str, *extra: str):
    from rlcli.bench.suites import components

    cfg = load_config(preset, [f'run.output_dir="{tmp_path}"', 'run.device="cpu"', *extra])
    monkeypatch.setattr(components, "preset_configs", lambda opts, *more, teams=None: {} if teams else {preset: cfg})
    return components.collector_suite(quick)


def test_the_collector_suite_prices_the_step_against_a_bare_loop_on_the_same_networks(quick, monkeypatch, tmp_path):
    cases, ratios = _collector_cases(quick, monkeypatch, tmp_path, "ppo_cartpole")
    try:
        ours, bare = cases
        assert (ours.name, bare.name) == ("ppo_cartpole", "ppo_cartpole.bare_loop")
        assert ours.work == bare.work == 512 and ours.params == bare.params
        (ratio,) = ratios
        # Floor frames/s over the collector's: the collector's step over the floor's.
        assert (ratio.name, ratio.numerator, ratio.denominator) == (
            "ppo_cartpole.step_over_bare_loop",
            bare.key,
            ours.key,
        )
        loop = bare.run.__self__
        agent = ours.run.__defaults__[0].algo.agent
        obs = torch.from_numpy(loop.obs).float()
        # Plain copies of the preset's own networks.
        torch.testing.assert_close(loop.policy(obs), agent.policy.net(obs))
        torch.testing.assert_close(loop.value(obs), agent.value.net(obs))
        before = loop.envs.episode_count, loop.obs.copy()
        bare.run()
        # 512 frames of 32 envs: 16 steps, each of the policy's actions.
        assert loop.steps == 16 and not (loop.obs == before[1]).all()
    finally:
        for case in cases:
            case.close()


def test_the_bare_loop_is_left_out_where_the_policy_has_memory(quick, monkeypatch, tmp_path):
    cases, ratios = _collector_cases(quick, monkeypatch, tmp_path, "ppo_cartpole", 'network.memory="gru"')
    try:
        assert [case.name for case in cases] == ["ppo_cartpole"] and ratios == []
    finally:
        for case in cases:
            case.close()
