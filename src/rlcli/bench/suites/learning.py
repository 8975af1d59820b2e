"""The suites of what an algorithm does with a batch: each algorithm's loss, forward and backward
(``loss``), and everything ``learn`` does with one batch (``update``). Both read the algorithm table
and the shipped presets, so a new algorithm or preset is benched without new code here."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.algos import ALGORITHMS, Benchable
from rlcli.bench.floors.policy_gradient import bare_ppo_loss
from rlcli.bench.floors.teams import bare_mappo_loss
from rlcli.bench.measure import Case, Ratio
from rlcli.bench.suites.offline import offline_configs, offline_iterations
from rlcli.bench.suites.options import BenchOptions, SuiteOutput, preset_configs, short_warm_up
from rlcli.config.algos import PPOConfig
from rlcli.config.schema import RunConfig
from rlcli.envs import env_family
from rlcli.models.heads import GaussianHead
from rlcli.models.precision import bf16_problem
from rlcli.run import build_run
from rlcli.timing import Timer


def loss_suite(opts: BenchOptions) -> SuiteOutput:
    """Forward and forward+backward calls/s of each algorithm's loss, batches 256 and 4096."""
    cases: list[Case] = []
    ratios: list[Ratio] = []
    for algo_name, cfg in algorithm_presets(opts, "collector.frames_per_batch=4096").items():
        algo, batch = _first_batch(cfg)
        generator = torch.Generator(device=batch.device).manual_seed(0)
        for size in (256, 4096):
            minibatch = algo.ingest_and_sample(batch.clone(), size, generator)
            _loss_cases(cases, ratios, opts, algo_name, cfg, algo, minibatch)
    # Each recurrent preset at the minibatch its update takes: backpropagation through time.
    for cfg in preset_configs(opts).values():
        if cfg.network.memory != "none":
            algo, batch = _first_batch(cfg)
            generator = torch.Generator(device=batch.device).manual_seed(0)
            minibatch = algo.ingest_and_sample(batch.clone(), cfg.algo.update_batch, generator)
            _loss_cases(cases, ratios, opts, cfg.algo.name, cfg, algo, minibatch)
    # Each MAPPO preset at the minibatch its update takes (mappo_vmas_balance: BenchMARL's 400 frames of 4
    # agents), beside its bare-torch floor.
    for cfg in preset_configs(opts, teams=True).values():
        if cfg.algo.name == "mappo":
            algo, batch = _first_batch(cfg)
            generator = torch.Generator(device=batch.device).manual_seed(0)
            minibatch = algo.ingest_and_sample(batch.clone(), cfg.algo.minibatch_size, generator)
            _loss_cases(cases, ratios, opts, cfg.algo.name, cfg, algo, minibatch)
    # One pixel preset per algorithm at the minibatch its update takes: the CNN's forward and backward;
    # these and the first 256-wide SAC preset again under bf16 (run.precision), where the device has it.
    for cfg in [*bf16_presets(opts, "fp32"), *bf16_presets(opts, "bf16")]:
        algo, batch = _first_batch(short_warm_up(cfg))
        size = cfg.algo.update_batch
        minibatch = algo.ingest_and_sample(batch.clone(), size, torch.Generator(device=batch.device).manual_seed(0))
        _loss_cases(cases, ratios, opts, cfg.algo.name, cfg, algo, minibatch)
    _bf16_ratios(cases, ratios, "loss")
    return cases, ratios


def bf16_presets(opts: BenchOptions, precision: str) -> list[RunConfig]:
    """The presets the bf16 columns cover, at ``precision``: one pixel preset per algorithm (the CNNs) and
    the first SAC preset with 256-wide critics; none at bf16 where the device lacks bfloat16 arithmetic."""
    if precision == "bf16" and bf16_problem(opts.device) is not None:
        return []
    configs = preset_configs(opts, f'run.precision="{precision}"')
    pixels = [cfg for cfg in one_pixel_preset_per_algorithm(configs).values() if env_family(cfg.env.id) is not None]
    wide = [
        cfg
        for cfg in configs.values()
        if cfg.algo.name == "sac" and env_family(cfg.env.id) is None and 256 in cfg.network.hidden_sizes
    ][:1]
    if precision == "fp32":
        # Its fp32 twin, unless the loss suite times that preset already as the algorithm's own.
        timed = {cfg.run.name for cfg in algorithm_presets(opts).values()}
        wide = [cfg for cfg in wide if cfg.run.name not in timed]
    return pixels + wide


def _bf16_ratios(cases: list[Case], ratios: list[Ratio], suite: str) -> None:
    """For each bf16 case, its speed-up over the same case in fp32 (rate over rate)."""
    by_key = {case.key: case for case in cases}
    for case in cases:
        if case.params.get("precision") != "bf16" or "bare_torch" in case.name:
            continue
        params = {key: value for key, value in case.params.items() if key != "precision"}
        twin = Case(case.suite, case.name, params, case.unit, 1, lambda: None).key
        if twin in by_key:
            ratios.append(Ratio(suite, f"{case.name}.bf16_speedup", params, "speedup", case.key, twin))


def update_suite(opts: BenchOptions) -> SuiteOutput:
    """Everything ``learn`` does with one batch, per preset, as frames of batch consumed per second
    (off-policy presets are timed past their warm-up, with their gradient steps)."""
    cases = []
    configs = [*one_pixel_preset_per_algorithm(preset_configs(opts)).values(), *bf16_presets(opts, "bf16")]
    for cfg in configs:
        algo, batch = _first_batch(short_warm_up(cfg))
        # The collector makes its batches on the run's device.
        assert batch.device is not None
        timer = Timer(batch.device)
        _learning(algo, batch, timer)

        # The objects as defaults, as in options.update_call: the tests read the algorithm back from them.
        def learn(algo: Benchable = algo, batch: TensorDict = batch, timer: Timer = timer) -> dict[str, float]:
            return algo.learn(batch.clone(), timer)

        bf16 = {"precision": "bf16"} if cfg.run.precision == "bf16" else {}
        cases.append(
            Case(
                "update",
                cfg.run.name,
                {"frames_per_batch": cfg.collector.frames_per_batch} | bf16,
                "frames/s",
                cfg.collector.frames_per_batch,
                learn,
            )
        )
    ratios: list[Ratio] = []
    _bf16_ratios(cases, ratios, "update")
    return cases + offline_iterations(opts), ratios


def algorithm_presets(opts: BenchOptions, *extra: str) -> dict[str, RunConfig]:
    """One preset per algorithm of the table: the first shipped one that uses it on vector observations
    (the loss suite times the pixel presets' at their own batch sizes)."""
    chosen: dict[str, RunConfig] = {}
    # The team presets at their own sizes: their envs and batches are their own (frames_per_batch a multiple
    # of their num_envs), and their rows are agents'.
    single, teams = preset_configs(opts, *extra, teams=False), preset_configs(opts, teams=True)
    for cfg in [*single.values(), *teams.values(), *offline_configs(opts).values()]:
        if cfg.algo.name in ALGORITHMS and env_family(cfg.env.id) is None:
            chosen.setdefault(cfg.algo.name, cfg)
    return chosen


def one_pixel_preset_per_algorithm(configs: dict[str, RunConfig]) -> dict[str, RunConfig]:
    """``configs`` with, of the pixel presets (ALE/ envs), only the first of each algorithm: the others
    (ppo_pong beside ppo_breakout) run the same networks on another game."""
    first: dict[tuple[str, bool | str], str] = {}
    for name, cfg in configs.items():
        first.setdefault((cfg.algo.name, env_family(cfg.env.id) is not None or name), name)
    return {name: configs[name] for name in first.values()}


def _first_batch(cfg: RunConfig) -> tuple[Benchable, TensorDict]:
    """The algorithm of ``cfg`` and a copy of one collected batch; the envs are closed, and torch is left on
    the update's threads (``run.threads``) for the timing that follows."""
    run = build_run(cfg)
    # Every algorithm of the ALGORITHMS table has the bench's hooks.
    assert isinstance(run.algo, Benchable)
    try:
        return run.algo, run.source.next_batch(Timer(run.device)).clone()
    finally:
        run.threads.updating()
        run.close()


def _learning(algo, batch: TensorDict, timer: Timer, limit: int = 100_000) -> None:
    """Feed ``batch`` to ``learn`` until it reports a loss: off-policy methods warm up first."""
    for _ in range(limit):
        if any(key.startswith("loss/") for key in algo.learn(batch.clone(), timer)):
            return
    raise RuntimeError(f"no loss after {limit} calls of learn")


def _loss_cases(
    cases: list[Case],
    ratios: list[Ratio],
    opts: BenchOptions,
    algo_name: str,
    cfg: RunConfig,
    algo: Benchable,
    minibatch: TensorDict,
) -> None:
    """Append the loss cases of one algorithm at one batch size."""
    loss = torch.compile(algo.loss) if opts.compile else algo.loss
    # Rows per call: a recurrent minibatch is [L, C] sequences.
    # A team algorithm's minibatch holds one per group, under the group's name.
    rows = minibatch.numel() if minibatch.batch_dims else sum(group.numel() for group in minibatch.values())
    params = {"preset": cfg.run.name, "batch": rows} | ({"compile": True} if opts.compile else {})
    params |= {"precision": "bf16"} if cfg.run.precision == "bf16" else {}

    def backward():
        algo.agent.zero_grad(set_to_none=True)
        loss(minibatch)["loss/total"].backward()

    cases.append(Case("loss", f"{algo_name}.forward", params, "calls/s", 1, lambda: loss(minibatch)))
    cases.append(Case("loss", f"{algo_name}.forward_backward", params, "calls/s", 1, backward))
    # The floor covers the preset's PPO: categorical policy, no value clipping.
    if (
        algo_name == "ppo"
        and isinstance(cfg.algo, PPOConfig)
        and minibatch[keys.ACTION].dtype == torch.int64
        and cfg.algo.clip_value is None
        and cfg.run.precision == "fp32"
    ):

        def floor():
            algo.agent.zero_grad(set_to_none=True)
            bare_ppo_loss(algo.agent, minibatch, algo.clip_epsilon, cfg.algo.value_coef, cfg.algo.entropy_coef)[
                0
            ].backward()

        cases.append(Case("loss", "ppo.bare_torch_forward_backward", params, "calls/s", 1, floor))
        ratios.append(Ratio("loss", "ppo.slowdown_vs_bare_torch", params, "slowdown", cases[-1].key, cases[-2].key))
    _team_floor(cases, ratios, algo_name, cfg, algo, minibatch, params)


def _team_floor(
    cases: list[Case], ratios: list[Ratio], algo_name: str, cfg: RunConfig, algo, minibatch: TensorDict, params: dict
) -> None:
    """MAPPO's bare-torch floor (one group of Box actions, a centralized critic, no value clipping, fp32)."""
    learners = getattr(algo, "learners", {})
    if algo_name != "mappo" or len(learners) != 1 or cfg.run.precision != "fp32" or not isinstance(cfg.algo, PPOConfig):
        return
    ((group, learner),) = learners.items()
    rows = minibatch.get(group)
    # The floor writes a Gaussian head's maths, unclipped values and advantages as stored.
    if not isinstance(learner.agent.policy, GaussianHead) or cfg.algo.clip_value is not None:
        return
    if cfg.algo.normalize_advantage:
        return
    coefficients = (learner.clip_epsilon, cfg.algo.value_coef, cfg.algo.entropy_coef)

    def floor():
        learner.agent.zero_grad(set_to_none=True)
        bare_mappo_loss(learner.agent, rows, *coefficients).backward()

    cases.append(Case("loss", "mappo.bare_torch_forward_backward", params, "calls/s", 1, floor))
    ratios.append(Ratio("loss", "mappo.slowdown_vs_bare_torch", params, "slowdown", cases[-1].key, cases[-2].key))
