"""The suite of on-policy updates beside their bare-torch floors (``onpolicy``): TRPO's whole update of
one rollout (PPO's loss is priced against its floor in the ``loss`` suite)."""

from __future__ import annotations

from rlcli.algos.trpo import TRPO
from rlcli.bench.floors.policy_gradient import BareTRPO
from rlcli.bench.measure import Case, Ratio
from rlcli.bench.suites.options import BenchOptions, SuiteOutput
from rlcli.config.load import load_config
from rlcli.run import build_run
from rlcli.timing import Timer


def onpolicy_suite(opts: BenchOptions) -> SuiteOutput:
    """TRPO's whole update of one trpo_pendulum rollout (2048 rows: the natural-gradient step, then 15 passes
    of value steps) beside its floor."""
    cfg = load_config("trpo_pendulum", [f'run.device="{opts.device}"', "timing.enabled=false", opts.threads_setting])
    run = build_run(cfg)
    algo = run.algo
    # trpo_pendulum builds TRPO, whose rollout and steps this case times.
    assert isinstance(algo, TRPO)
    try:
        timer = Timer(run.device)
        rows = algo.rollout.rows(run.source.next_batch(timer), timer)
    finally:
        run.close()
    bare = BareTRPO(algo)
    params = {"preset": "trpo_pendulum", "rows": rows.batch_size[0]}

    def update():
        algo.policy_step(rows)
        algo.value_steps(rows, timer)

    cases = [
        Case("onpolicy", "trpo.update", params, "calls/s", 1, update),
        Case("onpolicy", "trpo.bare_torch_update", params, "calls/s", 1, lambda: bare.step(rows)),
    ]
    return cases, [
        Ratio("onpolicy", "trpo.update.slowdown_vs_bare_torch", params, "slowdown", cases[1].key, cases[0].key)
    ]
