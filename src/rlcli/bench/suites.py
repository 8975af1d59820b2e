"""Benchmark suites: each is one registered function that returns cases to time. Suites read the
algorithm table and the shipped presets, so a new algorithm or preset is benched without new code
here; the bare-torch floors some cases are priced against are in :mod:`rlcli.bench.floors`, the
offline presets' cases in :mod:`rlcli.bench.offline`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.advantages import gae
from rlcli.algos import ALGORITHMS
from rlcli.bench import training
from rlcli.bench.floors import BareSAC, bare_ppo_loss, ensemble_member, gae_loop
from rlcli.bench.measure import Case, Ratio
from rlcli.bench.offline import offline_configs, offline_iterations, offline_updates

# Re-exported: benchmarks/replay_memory.py feeds the same transitions.
from rlcli.bench.transitions import BUFFER_SPEC, random_transitions
from rlcli.config.load import load_config
from rlcli.config.presets import available_presets
from rlcli.config.schema import RunConfig
from rlcli.envs import env_family, make_envs
from rlcli.models.encoders import Flat
from rlcli.run import build_run
from rlcli.timing import Timer


@dataclass(frozen=True)
class BenchOptions:
    device: torch.device
    quick: bool
    compile: bool
    scratch: Path
    """The bench's own folder, removed however it ends: run folders, stand-in datasets (``stand_ins``, by env id)."""
    stand_ins: dict[str, str] = field(default_factory=dict)


SuiteOutput = tuple[list[Case], list[Ratio]]
SUITES: dict[str, Callable[[BenchOptions], SuiteOutput]] = {}


def suite(name: str):
    def register(function: Callable[[BenchOptions], SuiteOutput]):
        SUITES[name] = function
        return function

    return register


def preset_configs(opts: BenchOptions, *extra: str) -> dict[str, RunConfig]:
    """Every shipped online preset whose env can be made here, on the bench device, with ``extra``
    overrides (a preset whose optional extra, such as mujoco, is not installed is left out; the
    offline ones are :func:`offline_configs`)."""
    device = f'run.device="{opts.device}"'
    online = [name for name in available_presets() if not load_config(name).offline]
    configs = {name: load_config(name, [device, "timing.enabled=false", *extra]) for name in online}
    return {name: cfg for name, cfg in configs.items() if _env_available(cfg.env.id)}


@functools.cache
def _env_available(env_id: str) -> bool:
    import gymnasium as gym

    from rlcli.envs import mujoco_warnings_once

    mujoco_warnings_once(env_id)
    try:
        gym.make(env_id).close()
    except gym.error.DependencyNotInstalled:
        return False
    return True


@suite("env")
def env_suite(opts: BenchOptions) -> SuiteOutput:
    """Vector-env frames/s for each preset's env, by num_envs and vectorization mode."""
    import gymnasium as gym

    cases = []
    envs_seen = {cfg.env.id: cfg.env for cfg in preset_configs(opts).values()}
    for env_id, env_cfg in envs_seen.items():
        # An ALE/ preset's kwargs are its vector env's, which sync or async envs of the raw game do not take.
        family = env_family(env_id) is not None
        modes = [] if family else ["sync"]
        if gym.spec(env_id).vector_entry_point is not None:
            modes.append("vector_entry_point")
        for num_envs in [8] if opts.quick else [1, 8, 32]:
            for mode in modes + ([] if opts.quick or family or num_envs != 8 else ["async"]):
                envs = make_envs(env_cfg.model_copy(update={"num_envs": num_envs, "vectorization": mode}))
                envs.reset(seed=0)
                envs.action_space.seed(0)
                actions = [envs.action_space.sample() for _ in range(64)]

                def run(envs=envs, actions=actions):
                    for action in actions:
                        envs.step(action)

                cases.append(
                    Case(
                        "env", env_id, {"num_envs": num_envs, "mode": mode}, "frames/s", 64 * num_envs, run, envs.close
                    )
                )
    return cases, []


@suite("collector")
def collector_suite(opts: BenchOptions) -> SuiteOutput:
    """Frames/s of the real collector with each preset's policy (policy on the device, envs on CPU)."""
    cases = []
    for name, cfg in preset_configs(opts).items():
        run = build_run(cfg)
        timer = Timer(run.device)
        cases.append(
            Case(
                "collector",
                name,
                {"frames_per_batch": cfg.collector.frames_per_batch},
                "frames/s",
                cfg.collector.frames_per_batch,
                lambda run=run, timer=timer: run.source.next_batch(timer),
                run.close,
            )
        )
    return cases, []


@suite("advantage")
def advantage_suite(opts: BenchOptions) -> SuiteOutput:
    """GAE elements/s on [T, N] rollouts, and its speedup over the reversed loop."""
    cases, ratios = [], []
    generator = torch.Generator().manual_seed(0)
    for steps, envs in [(512, 1), (512, 32), (2048, 16), (128, 256)]:
        shape = (steps, envs)
        data = [torch.randn(shape, generator=generator).to(opts.device) for _ in range(3)]
        done = [(torch.rand(shape, generator=generator) < p).to(opts.device) for p in (0.01, 0.005)]
        params = {"T": steps, "N": envs}
        for name, function in (("gae", gae), ("gae_loop", gae_loop)):
            if name == "gae_loop" and shape not in ((512, 32), (2048, 16)):
                continue
            cases.append(
                Case(
                    "advantage",
                    name,
                    params,
                    "elements/s",
                    steps * envs,
                    lambda f=function, d=data, e=done: f(*d, *e, gamma=0.99, lam=0.95),
                )
            )
        if shape in ((512, 32), (2048, 16)):
            ratios.append(Ratio("advantage", "gae_speedup", params, "speedup", cases[-2].key, cases[-1].key))
    return cases, ratios


def _algorithm_presets(opts: BenchOptions, *extra: str) -> dict[str, RunConfig]:
    """One preset per algorithm of the table: the first shipped one that uses it on vector observations
    (the loss suite times the pixel presets' at their own batch sizes)."""
    chosen: dict[str, RunConfig] = {}
    for cfg in [*preset_configs(opts, *extra).values(), *offline_configs(opts).values()]:
        if cfg.algo.name in ALGORITHMS and env_family(cfg.env.id) is None:
            chosen.setdefault(cfg.algo.name, cfg)
    return chosen


def _first_batch(cfg: RunConfig) -> tuple[Any, TensorDict]:
    """The algorithm of ``cfg`` and a copy of one collected batch; the envs are closed."""
    run = build_run(cfg)
    try:
        return run.algo, run.source.next_batch(Timer(run.device)).clone()
    finally:
        run.close()


def _one_pixel_preset_per_algorithm(configs: dict[str, RunConfig]) -> dict[str, RunConfig]:
    """``configs`` with, of the pixel presets (ALE/ envs), only the first of each algorithm: the others
    (ppo_pong beside ppo_breakout) run the same networks on another game."""
    first = {}
    for name, cfg in configs.items():
        first.setdefault((cfg.algo.name, env_family(cfg.env.id) is not None or name), name)
    return {name: configs[name] for name in first.values()}


def _short_warm_up(cfg: RunConfig) -> RunConfig:
    """``cfg`` with its warm-up (an off-policy ``learning_starts``) cut to one batch: Atari's 100k
    random frames would cost minutes of env steps before the first timed update."""
    if getattr(cfg.algo, "learning_starts", 0) <= cfg.collector.frames_per_batch:
        return cfg
    return cfg.model_copy(
        update={"algo": cfg.algo.model_copy(update={"learning_starts": cfg.collector.frames_per_batch})}
    )


def _learning(algo, batch: TensorDict, timer: Timer, limit: int = 100_000) -> None:
    """Feed ``batch`` to ``learn`` until it reports a loss: off-policy methods warm up first."""
    for _ in range(limit):
        if any(key.startswith("loss/") for key in algo.learn(batch.clone(), timer)):
            return
    raise RuntimeError(f"no loss after {limit} calls of learn")


@suite("loss")
def loss_suite(opts: BenchOptions) -> SuiteOutput:
    """Forward and forward+backward calls/s of each algorithm's loss, batches 256 and 4096."""
    cases: list[Case] = []
    ratios: list[Ratio] = []
    for algo_name, cfg in _algorithm_presets(opts, "collector.frames_per_batch=4096").items():
        algo, batch = _first_batch(cfg)
        generator = torch.Generator(device=batch.device).manual_seed(0)
        for size in (256, 4096):
            minibatch = algo.ingest_and_sample(batch.clone(), size, generator)
            _loss_cases(cases, ratios, opts, algo_name, cfg, algo, minibatch)
    # One pixel preset per algorithm at the minibatch its update takes: the CNN's forward and backward.
    for cfg in _one_pixel_preset_per_algorithm(preset_configs(opts)).values():
        if env_family(cfg.env.id) is None:
            continue
        algo, batch = _first_batch(_short_warm_up(cfg))
        size = getattr(cfg.algo, "minibatch_size", None) or cfg.algo.batch_size
        minibatch = algo.ingest_and_sample(batch.clone(), size, torch.Generator(device=batch.device).manual_seed(0))
        _loss_cases(cases, ratios, opts, cfg.algo.name, cfg, algo, minibatch)
    return cases, ratios


def _loss_cases(
    cases: list[Case],
    ratios: list[Ratio],
    opts: BenchOptions,
    algo_name: str,
    cfg: RunConfig,
    algo,
    minibatch: TensorDict,
) -> None:
    """Append the loss cases of one algorithm at one batch size."""
    loss = torch.compile(algo.loss) if opts.compile else algo.loss
    params = {"preset": cfg.run.name, "batch": minibatch.batch_size[0]} | ({"compile": True} if opts.compile else {})

    def backward():
        algo.agent.zero_grad(set_to_none=True)
        loss(minibatch)["loss/total"].backward()

    cases.append(Case("loss", f"{algo_name}.forward", params, "calls/s", 1, lambda: loss(minibatch)))
    cases.append(Case("loss", f"{algo_name}.forward_backward", params, "calls/s", 1, backward))
    # The floor covers the preset's PPO: categorical policy, no value clipping.
    if algo_name == "ppo" and minibatch[keys.ACTION].dtype == torch.int64 and cfg.algo.clip_value is None:

        def floor():
            algo.agent.zero_grad(set_to_none=True)
            bare_ppo_loss(algo.agent, minibatch, algo.clip_epsilon, cfg.algo.value_coef, cfg.algo.entropy_coef)[
                0
            ].backward()

        cases.append(Case("loss", "ppo.bare_torch_forward_backward", params, "calls/s", 1, floor))
        ratios.append(Ratio("loss", "ppo.slowdown_vs_bare_torch", params, "slowdown", cases[-1].key, cases[-2].key))


@suite("update")
def update_suite(opts: BenchOptions) -> SuiteOutput:
    """Everything ``learn`` does with one batch, per preset, as frames of batch consumed per second
    (off-policy presets are timed past their warm-up, with their gradient steps)."""
    cases = []
    for name, cfg in _one_pixel_preset_per_algorithm(preset_configs(opts)).items():
        algo, batch = _first_batch(_short_warm_up(cfg))
        timer = Timer(batch.device)
        _learning(algo, batch, timer)
        cases.append(
            Case(
                "update",
                name,
                {"frames_per_batch": cfg.collector.frames_per_batch},
                "frames/s",
                cfg.collector.frames_per_batch,
                lambda algo=algo, batch=batch, timer=timer: algo.learn(batch.clone(), timer),
            )
        )
    return cases + offline_iterations(opts), []


@suite("buffer")
def buffer_suite(opts: BenchOptions) -> SuiteOutput:
    """Replay extend, uniform and prioritized sampling and priority updates at capacity 1M,
    beside a bare-torch floor (``torch.randint`` + ``index_select`` per key) on the same storage."""
    from rlcli.config.fields import ReplayConfig
    from rlcli.replay.storage import ReplayBuffer

    capacity, size = 1_000_000, 256
    generator = torch.Generator().manual_seed(0)
    cases: list[Case] = []
    buffers = {}
    for prioritized in (False, True):
        buffer = ReplayBuffer(
            ReplayConfig(capacity=capacity, prioritized=prioritized), BUFFER_SPEC, device=torch.device("cpu")
        )
        for _ in range(10):
            buffer.extend(random_transitions((100, 1000), generator))
        buffers[prioritized] = buffer
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


@suite("offpolicy")
def offpolicy_suite(opts: BenchOptions) -> SuiteOutput:
    """SAC's whole gradient step (batch 256, 256x256 networks, twin critics, actor, temperature,
    target update) beside a bare-torch floor, and critic ensembles of E = 2 and 10 (and a Python
    loop over 10 separate critics), forward and backward at batch 256."""
    from rlcli.models.critics import QEnsemble

    cfg = load_config(
        "sac_pendulum",
        [
            f'run.device="{opts.device}"',
            "timing.enabled=false",
            "network.hidden_sizes=[256,256]",
            "algo.learning_starts=0",
        ],
    )
    run = build_run(cfg)
    try:
        timer = Timer(run.device)
        for _ in range(40):
            run.algo.replay.observe(run.source.next_batch(timer))
    finally:
        run.close()
    algo = run.algo
    sample = algo.replay.sample(256, torch.Generator().manual_seed(0))
    params = {"batch": 256, "hidden": "256x256", "critics": 2}
    cases = [Case("offpolicy", "sac.update", params, "calls/s", 1, lambda: algo.update(sample, timer))]
    bare = BareSAC(algo, algo.target_entropy, cfg.algo.gamma, cfg.algo.tau)
    cases.append(Case("offpolicy", "sac.bare_torch_update", params, "calls/s", 1, lambda: bare.step(sample)))
    ratios = [Ratio("offpolicy", "sac.update.slowdown_vs_bare_torch", params, "slowdown", cases[1].key, cases[0].key)]
    generator = torch.Generator().manual_seed(1)
    obs, action = torch.randn(256, 17, generator=generator), torch.randn(256, 6, generator=generator)
    x = torch.cat([obs, action], -1)
    # At 256 units a CPU is bound by the E x 256 x 256 multiply-adds themselves; at 64 by the
    # per-kernel overhead that batching removes.
    for hidden in (256, 64):
        keys_by_members = {}
        for members in (2, 10):
            critic = QEnsemble(members, Flat((17,)), 6, [hidden, hidden], activation="relu")

            def ensemble(critic=critic):
                critic.zero_grad(set_to_none=True)
                critic(obs, action).sum().backward()

            cases.append(
                Case(
                    "offpolicy",
                    "critic_ensemble",
                    {"E": members, "hidden": hidden, "batch": 256},
                    "calls/s",
                    1,
                    ensemble,
                )
            )
            keys_by_members[members] = cases[-1].key
        loop = [
            ensemble_member(QEnsemble(1, Flat((17,)), 6, [hidden, hidden], activation="relu").net, 0) for _ in range(10)
        ]

        def python_loop(loop=loop):
            for net in loop:
                net.zero_grad(set_to_none=True)
            sum(net(x).sum() for net in loop).backward()

        cases.append(
            Case(
                "offpolicy", "critic_python_loop", {"E": 10, "hidden": hidden, "batch": 256}, "calls/s", 1, python_loop
            )
        )
        ratios.append(
            Ratio(
                "offpolicy",
                "critic_ensemble.E10_vs_E2",
                {"hidden": hidden, "batch": 256},
                "slowdown",
                keys_by_members[2],
                keys_by_members[10],
            )
        )
        ratios.append(
            Ratio(
                "offpolicy",
                "critic_python_loop.E10_vs_ensemble_E2",
                {"hidden": hidden, "batch": 256},
                "slowdown",
                keys_by_members[2],
                cases[-1].key,
            )
        )
    offline_cases, offline_ratios = offline_updates(opts)
    return cases + offline_cases, ratios + offline_ratios


@suite("distributed")
def distributed_suite(opts: BenchOptions) -> SuiteOutput:
    """The gloo all-reduce of one PPO gradient (ppo_cartpole's parameter count) between this
    process and a partner process on the same machine: what each data-parallel step adds."""
    import socket
    import subprocess
    import sys

    import torch.distributed as dist

    if opts.device.type != "cpu" or dist.is_initialized():
        return [], []
    cfg = preset_configs(opts)["ppo_cartpole"]
    run = build_run(cfg)
    numel = sum(p.numel() for p in run.algo.agent.parameters())
    run.close()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    # The partner rank matches this process's calls until it is killed at the end. Its own session: a
    # Ctrl-C at the terminal reaches the bench alone, which ends the partner on its way out.
    partner = subprocess.Popen(
        [sys.executable, "-m", "rlcli.bench.partner", address, str(numel)],
        start_new_session=True,
        stderr=subprocess.DEVNULL,
    )
    try:
        dist.init_process_group("gloo", rank=0, world_size=2, init_method=address)
    except BaseException:
        partner.kill()
        partner.wait()
        raise
    buf, calls = torch.ones(numel), 100

    def reduce() -> None:
        dist.all_reduce(torch.tensor([float(calls)]))
        for _ in range(calls):
            dist.all_reduce(buf)

    def close() -> None:
        # Killed rather than told to stop: a stop signal may have cut a reduce short, with the partner
        # waiting inside a collective that this process will never join.
        partner.kill()
        partner.wait()
        dist.destroy_process_group()

    return [Case("distributed", "gloo_all_reduce", {"numel": numel, "ranks": 2}, "calls/s", calls, reduce, close)], []


@suite("train")
def train_suite(opts: BenchOptions) -> SuiteOutput:
    """End-to-end frames/s of each preset through the real trainer, timed past its warm-up
    (:mod:`rlcli.bench.training`)."""
    configs = preset_configs(opts, *training.overrides(opts))
    return training.train_cases(opts, {name: _short_warm_up(cfg) for name, cfg in configs.items()}), []
