"""The suites of off-policy learning: the replay buffer's extend, samples and priority updates
(``buffer``), and the whole gradient steps of SAC, IQL, CQL, QR-DQN, TQC and CrossQ with critic
ensembles by size (``offpolicy``), each beside the same work in bare torch
(:mod:`rlcli.bench.floors`, by family)."""

from __future__ import annotations

import torch

from rlcli.algos.crossq import CrossQ
from rlcli.algos.dqn import DQN
from rlcli.algos.sac import SAC
from rlcli.bench.floors.actor_critic import BareCrossQ, BareSAC, BareTQC, ensemble_member
from rlcli.bench.floors.value_based import BareQRDQN
from rlcli.bench.measure import Case, Ratio
from rlcli.bench.suites.offline import offline_updates
from rlcli.bench.suites.options import BenchOptions, SuiteOutput, floor_call, update_call
from rlcli.bench.transitions import BUFFER_SPEC, random_transitions
from rlcli.config.algos import CrossQConfig, QRDQNConfig, SACConfig, TQCConfig
from rlcli.config.load import load_config
from rlcli.models.encoders import Flat
from rlcli.run import build_run
from rlcli.timing import Timer


def buffer_suite(opts: BenchOptions) -> SuiteOutput:
    """Replay extend, uniform and prioritized sampling and priority updates at capacity 1M,
    beside a bare-torch floor (``torch.randint`` + ``index_select`` per key) on the same storage."""
    from rlcli.config.fields import ReplayConfig
    from rlcli.replay.storage import ReplayBuffer

    capacity, size = 1_000_000, 256
    generator = torch.Generator().manual_seed(0)
    cases: list[Case] = []
    buffers: dict[bool, ReplayBuffer] = {}
    for by_priority in (False, True):
        # model_validate: the type checker, without pydantic's plugin, sees no defaults in Field(default, ...).
        cfg = ReplayConfig.model_validate({"capacity": capacity, "prioritized": by_priority})
        buffer = ReplayBuffer(cfg, BUFFER_SPEC, device=torch.device("cpu"))
        for _ in range(10):
            buffer.extend(random_transitions((100, 1000), generator))
        buffers[by_priority] = buffer
    uniform, prioritized = buffers[False], buffers[True]
    step = random_transitions((16, 32), generator)
    sample_generator = torch.Generator().manual_seed(1)
    params = {"capacity": capacity, "batch": size}
    cases.append(
        Case("buffer", "extend", {"capacity": capacity, "T": 16, "N": 32}, "calls/s", 1, lambda: uniform.extend(step))
    )
    storage = list(uniform.tensors.values())

    def floor():
        index = torch.randint(capacity, (size,), generator=sample_generator)
        return [tensor.index_select(0, index) for tensor in storage]

    cases.append(Case("buffer", "bare_torch_sample", params, "calls/s", 1, floor))
    cases.append(Case("buffer", "sample_uniform", params, "calls/s", 1, lambda: uniform.sample(size, sample_generator)))
    cases.append(
        Case("buffer", "sample_prioritized", params, "calls/s", 1, lambda: prioritized.sample(size, sample_generator))
    )
    index = torch.randint(capacity, (size,), generator=generator)
    td_error = torch.rand(size, generator=generator)
    cases.append(
        Case(
            "buffer", "update_priorities", params, "calls/s", 1, lambda: prioritized.update_priorities(index, td_error)
        )
    )
    ratios = [Ratio("buffer", "sample_uniform.slowdown_vs_bare_torch", params, "slowdown", cases[1].key, cases[2].key)]
    return cases, ratios


def offpolicy_suite(opts: BenchOptions) -> SuiteOutput:
    """SAC's whole gradient step beside its bare-torch floor, critic ensembles by size, IQL's and CQL's
    gradient steps beside theirs (:func:`rlcli.bench.suites.offline.offline_updates`), then QR-DQN's,
    TQC's and CrossQ's beside theirs and TQC's beside REDQ's."""
    cases, ratios = _sac_update(opts)
    generator = torch.Generator().manual_seed(1)
    obs, action = torch.randn(256, 17, generator=generator), torch.randn(256, 6, generator=generator)
    for hidden in (256, 64):
        ensemble_cases, ensemble_ratios = _critic_ensembles(obs, action, hidden)
        cases += ensemble_cases
        ratios += ensemble_ratios
    offline_cases, offline_ratios = offline_updates(opts)
    replay_cases, replay_ratios = _beside_floors(opts)
    redq_cases, redq_ratios = _tqc_beside_redq(opts)
    return cases + offline_cases + replay_cases + redq_cases, ratios + offline_ratios + replay_ratios + redq_ratios


def _beside_floors(opts: BenchOptions) -> SuiteOutput:
    """QR-DQN's, TQC's and CrossQ's whole gradient steps on their cheapest presets' minibatches, each
    beside its floor (separate critics, the quantile loss pair by pair)."""
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
        cases.append(Case("offpolicy", f"{name}.update", params, "calls/s", 1, update_call(algo, sample, timer)))
        cases.append(Case("offpolicy", f"{name}.bare_torch_update", params, "calls/s", 1, floor_call(bare, sample)))
        ratios.append(
            Ratio(
                "offpolicy", f"{name}.update.slowdown_vs_bare_torch", params, "slowdown", cases[-1].key, cases[-2].key
            )
        )
    return cases, ratios


def _sac_update(opts: BenchOptions) -> SuiteOutput:
    """SAC's whole gradient step (batch 256, 256x256 networks, twin critics, actor, temperature,
    target update) beside a bare-torch floor, on a minibatch of 40 collected batches of sac_pendulum."""
    # Like every other replay case, under the --threads setting (this case alone used to leave the
    # preset's own run.threads in place).
    algo, cfg, sample, timer = _replay_step(opts, "sac_pendulum", ["network.hidden_sizes=[256,256]"])
    params = {"batch": 256, "hidden": "256x256", "critics": 2}
    cases = [Case("offpolicy", "sac.update", params, "calls/s", 1, lambda: algo.update(sample, timer))]
    bare = BareSAC(algo, algo.target_entropy, cfg.algo.gamma, cfg.algo.tau)
    cases.append(Case("offpolicy", "sac.bare_torch_update", params, "calls/s", 1, lambda: bare.step(sample)))
    ratios = [Ratio("offpolicy", "sac.update.slowdown_vs_bare_torch", params, "slowdown", cases[1].key, cases[0].key)]
    return cases, ratios


def _critic_ensembles(obs: torch.Tensor, action: torch.Tensor, hidden: int) -> SuiteOutput:
    """Critic ensembles of E = 2 and 10 members and a Python loop over 10 separate critics, each
    ``hidden`` x ``hidden``, forward and backward on ``obs`` and ``action``.

    At 256 units a CPU is bound by the E x 256 x 256 multiply-adds themselves; at 64 by the
    per-kernel overhead that batching removes.

    Args:
        obs: [256, 17] float32 (HalfCheetah's size).
        action: [256, 6] float32.
    """
    from rlcli.models.critics import QEnsemble

    x = torch.cat([obs, action], -1)
    cases = []
    for members in (2, 10):
        critic = QEnsemble(members, Flat((17,)), 6, [hidden, hidden], activation="relu")

        def ensemble(critic=critic):
            critic.zero_grad(set_to_none=True)
            critic(obs, action).sum().backward()

        params = {"E": members, "hidden": hidden, "batch": 256}
        cases.append(Case("offpolicy", "critic_ensemble", params, "calls/s", 1, ensemble))
    loop = [
        ensemble_member(QEnsemble(1, Flat((17,)), 6, [hidden, hidden], activation="relu").net, 0) for _ in range(10)
    ]

    def python_loop():
        for net in loop:
            net.zero_grad(set_to_none=True)
        sum(net(x).sum() for net in loop).backward()

    params = {"E": 10, "hidden": hidden, "batch": 256}
    cases.append(Case("offpolicy", "critic_python_loop", params, "calls/s", 1, python_loop))
    e2, e10, looped = (case.key for case in cases)
    params = {"hidden": hidden, "batch": 256}
    ratios = [
        Ratio("offpolicy", "critic_ensemble.E10_vs_E2", params, "slowdown", e2, e10),
        Ratio("offpolicy", "critic_python_loop.E10_vs_ensemble_E2", params, "slowdown", e2, looped),
    ]
    return cases, ratios


def _replay_step(opts: BenchOptions, preset: str, extra: list[str]):
    """An off-policy preset's algorithm after 40 collected batches, a minibatch of its batch size and a timer."""
    cfg = load_config(
        preset,
        [f'run.device="{opts.device}"', "timing.enabled=false", "algo.learning_starts=0", opts.threads_setting, *extra],
    )
    run = build_run(cfg)
    algo, settings = run.algo, cfg.algo
    # The presets timed here are SAC's, TQC's (SAC's class), QR-DQN's (DQN's) and CrossQ's: replay algorithms.
    assert isinstance(algo, (SAC, DQN, CrossQ))
    assert isinstance(settings, (SACConfig, TQCConfig, QRDQNConfig, CrossQConfig))
    try:
        timer = Timer(run.device)
        for _ in range(40):
            algo.replay.observe(run.source.next_batch(timer))
    finally:
        run.close()
    sample = algo.replay.sample(settings.batch_size, torch.Generator().manual_seed(0))
    return algo, cfg, sample, timer


def _tqc_beside_redq(opts: BenchOptions) -> SuiteOutput:
    """TQC's step with 5 critics of 25 quantiles beside REDQ's (SAC, 5 critics, subsets of 2, the mean in
    the actor's loss), both 256x256 on Pendulum's batches of 256."""
    common = ["network.hidden_sizes=[256,256]", "algo.num_critics=5", "collector.frames_per_batch=8"]
    tqc = _replay_step(opts, "tqc_pendulum", common)
    redq = _replay_step(opts, "sac_pendulum", [*common, "algo.critic_subset=2", 'algo.actor_q="mean"'])
    params = {"critics": 5, "hidden": "256x256", "batch": 256}
    cases = [
        Case("offpolicy", "tqc.update_5_critics", params, "calls/s", 1, lambda: tqc[0].update(tqc[2], tqc[3])),
        Case("offpolicy", "redq.update_5_critics", params, "calls/s", 1, lambda: redq[0].update(redq[2], redq[3])),
    ]
    return cases, [Ratio("offpolicy", "tqc.update_5_critics_vs_redq", params, "slowdown", cases[1].key, cases[0].key)]
