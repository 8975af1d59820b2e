"""The suite of the gradient steps of QR-DQN, TQC, CrossQ and TRPO (the algorithms of sb3-contrib's part
of RL-Zoo's table), each beside its bare-torch floor (:mod:`rlcli.bench.contrib_floors`), and TQC's
step beside REDQ's (SAC with the same critic ensemble) at the same width and ensemble size."""

from __future__ import annotations

import torch

from rlcli.bench.contrib_floors import BareCrossQ, BareQRDQN, BareTQC, BareTRPO
from rlcli.bench.measure import Case, Ratio
from rlcli.bench.suites.options import BenchOptions, SuiteOutput
from rlcli.config.load import load_config
from rlcli.run import build_run
from rlcli.timing import Timer


def contrib_suite(opts: BenchOptions) -> SuiteOutput:
    """Each algorithm's whole gradient step on its cheapest preset's minibatch, beside its floor."""
    cases: list[Case] = []
    ratios: list[Ratio] = []
    for name, preset, extra, floor in (
        ("qrdqn", "qrdqn_cartpole", [], lambda algo, cfg: BareQRDQN(algo, cfg.algo.gamma)),
        (
            "tqc",
            "tqc_pendulum",
            [],
            lambda algo, cfg: BareTQC(algo, kept=cfg.algo.kept_quantiles, gamma=cfg.algo.gamma, tau=cfg.algo.tau),
        ),
        # policy_delay 1: the floor takes the actor's step every time, so the library's must too.
        (
            "crossq",
            "crossq_pendulum",
            ["algo.policy_delay=1"],
            lambda algo, cfg: BareCrossQ(algo, gamma=cfg.algo.gamma),
        ),
    ):
        algo, cfg, sample, timer = _replay_step(opts, preset, extra)
        params = {"preset": preset, "batch": cfg.algo.batch_size}
        bare = floor(algo, cfg)
        cases.append(
            Case("contrib", f"{name}.update", params, "calls/s", 1, lambda a=algo, s=sample, t=timer: a.update(s, t))
        )
        cases.append(
            Case("contrib", f"{name}.bare_torch_update", params, "calls/s", 1, lambda b=bare, s=sample: b.step(s))
        )
        ratios.append(
            Ratio("contrib", f"{name}.update.slowdown_vs_bare_torch", params, "slowdown", cases[-1].key, cases[-2].key)
        )
    cases_trpo, ratios_trpo = _trpo(opts)
    cases_tqc, ratios_tqc = _tqc_beside_redq(opts)
    return cases + cases_trpo + cases_tqc, ratios + ratios_trpo + ratios_tqc


def _replay_step(opts: BenchOptions, preset: str, extra: list[str]):
    """An off-policy preset's algorithm after 40 collected batches, a minibatch of its batch size and a timer."""
    cfg = load_config(
        preset,
        [f'run.device="{opts.device}"', "timing.enabled=false", "algo.learning_starts=0", opts.threads_setting, *extra],
    )
    run = build_run(cfg)
    try:
        timer = Timer(run.device)
        for _ in range(40):
            run.algo.replay.observe(run.source.next_batch(timer))
    finally:
        run.close()
    sample = run.algo.replay.sample(cfg.algo.batch_size, torch.Generator().manual_seed(0))
    return run.algo, cfg, sample, timer


def _trpo(opts: BenchOptions) -> SuiteOutput:
    """TRPO's whole update of one trpo_pendulum rollout (2048 rows: the natural-gradient step, then 15 passes
    of value steps) beside its floor."""
    cfg = load_config("trpo_pendulum", [f'run.device="{opts.device}"', "timing.enabled=false", opts.threads_setting])
    run = build_run(cfg)
    try:
        timer = Timer(run.device)
        rows = run.algo.rollout.rows(run.source.next_batch(timer), timer)
    finally:
        run.close()
    algo = run.algo
    bare = BareTRPO(algo)
    params = {"preset": "trpo_pendulum", "rows": rows.batch_size[0]}

    def update():
        algo.policy_step(rows)
        algo.value_steps(rows, timer)

    cases = [
        Case("contrib", "trpo.update", params, "calls/s", 1, update),
        Case("contrib", "trpo.bare_torch_update", params, "calls/s", 1, lambda: bare.step(rows)),
    ]
    return cases, [
        Ratio("contrib", "trpo.update.slowdown_vs_bare_torch", params, "slowdown", cases[1].key, cases[0].key)
    ]


def _tqc_beside_redq(opts: BenchOptions) -> SuiteOutput:
    """TQC's step with 5 critics of 25 quantiles beside REDQ's (SAC, 5 critics, subsets of 2, the mean in
    the actor's loss), both 256x256 on Pendulum's batches of 256."""
    common = ["network.hidden_sizes=[256,256]", "algo.num_critics=5", "collector.frames_per_batch=8"]
    tqc = _replay_step(opts, "tqc_pendulum", common)
    redq = _replay_step(opts, "sac_pendulum", [*common, "algo.critic_subset=2", 'algo.actor_q="mean"'])
    params = {"critics": 5, "hidden": "256x256", "batch": 256}
    cases = [
        Case("contrib", "tqc.update_5_critics", params, "calls/s", 1, lambda: tqc[0].update(tqc[2], tqc[3])),
        Case("contrib", "redq.update_5_critics", params, "calls/s", 1, lambda: redq[0].update(redq[2], redq[3])),
    ]
    return cases, [Ratio("contrib", "tqc.update_5_critics_vs_redq", params, "slowdown", cases[1].key, cases[0].key)]
