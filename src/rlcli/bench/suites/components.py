"""The suites of the pieces a rollout goes through, each timed alone: the vector envs (``env``), the
collector with each preset's policy (``collector``) and the advantage estimate (``advantage``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from rlcli.bench.floors.policy_gradient import BareActLoop, gae_loop
from rlcli.bench.floors.teams import RAW_STEPS, RawVmas, ReplayedActions, draws
from rlcli.bench.measure import Case, Ratio
from rlcli.bench.suites.options import BenchOptions, SuiteOutput, preset_configs
from rlcli.collectors.stepper import Collector
from rlcli.collectors.teams import TeamCollector
from rlcli.envs import env_family, make_envs
from rlcli.envs.teams import make_team_envs, team_kind
from rlcli.envs.teams.registry import VMAS_PREFIX
from rlcli.learning.advantages import gae
from rlcli.models.actor_critic import ActorCritic
from rlcli.models.heads import CategoricalHead, GaussianHead
from rlcli.run import build_run
from rlcli.timing import Timer

if TYPE_CHECKING:
    from gymnasium.vector import VectorEnv
    from tensordict import TensorDict

    from rlcli.config.schema import EnvConfig, RunConfig
    from rlcli.run import Run

ENV_STEPS = 64
"""Steps of sampled actions in one call of an env case."""


def env_suite(opts: BenchOptions) -> SuiteOutput:
    """Vector-env frames/s for each preset's env, by num_envs and vectorization mode, and on EnvPool beside them
    (mode "envpool") where it is installed and has the env, with its speed-up over gymnasium's vector entry point
    where the env has one, else over sync envs."""
    import gymnasium as gym

    cases, ratios = [], []
    # Team envs are stepped by the collector suite's cases of the team presets.
    envs_seen = {cfg.env.id: cfg.env for cfg in preset_configs(opts).values() if team_kind(cfg.env.id) is None}
    for env_id, env_cfg in envs_seen.items():
        # An ALE/ preset's kwargs are its vector env's, which sync or async envs of the raw game do not take.
        family = env_family(env_id) is not None
        modes = [] if family else ["sync"]
        if gym.spec(env_id).vector_entry_point is not None:
            modes.append("vector_entry_point")
        for num_envs in [8] if opts.quick else [1, 8, 32]:
            for mode in modes + ([] if opts.quick or family or num_envs != 8 else ["async"]):
                steps = _EnvSteps(env_cfg.model_copy(update={"num_envs": num_envs, "vectorization": mode}))
                params = {"num_envs": num_envs, "mode": mode}
                cases.append(
                    Case(
                        "env", env_id, params, "frames/s", ENV_STEPS * num_envs, steps.run, steps.close, open=steps.open
                    )
                )
                if mode == modes[-1]:
                    gymnasium = cases[-1].key
            if _on_envpool(env_cfg):
                steps = _EnvSteps(env_cfg.model_copy(update={"num_envs": num_envs, "backend": "envpool"}))
                params = {"num_envs": num_envs, "mode": "envpool"}
                work = ENV_STEPS * num_envs
                cases.append(Case("env", env_id, params, "frames/s", work, steps.run, steps.close, open=steps.open))
                ratios.append(
                    Ratio("env", f"{env_id}.envpool_speedup", {"num_envs": num_envs}, "x", cases[-1].key, gymnasium)
                )
    return cases, ratios


def _on_envpool(env_cfg: EnvConfig) -> bool:
    """Whether EnvPool is installed and makes ``env_cfg``'s env with its kwargs."""
    from importlib.util import find_spec

    from rlcli.envs import envpool_problems

    return find_spec("envpool") is not None and not envpool_problems(env_cfg.id, env_cfg.kwargs)


class _EnvSteps:
    """The work of an env case: steps of sampled actions on vector envs made when the case is opened,
    just before it is timed, and closed when it is done. Not made with the case: every case's envs
    (async workers included) would be alive at once, and a stop signal would have to close them all."""

    def __init__(self, env_cfg: EnvConfig):
        self.env_cfg = env_cfg
        self.envs: VectorEnv | None = None
        self.actions: list = []

    def open(self) -> None:
        self.envs = make_envs(self.env_cfg)
        self.envs.reset(seed=0)
        self.envs.action_space.seed(0)
        self.actions = [self.envs.action_space.sample() for _ in range(ENV_STEPS)]

    def run(self) -> None:
        # The bench opens a case before it times it.
        assert self.envs is not None
        for action in self.actions:
            self.envs.step(action)

    def close(self) -> None:
        if self.envs is not None:
            self.envs.close()
            self.envs = None


def collector_suite(opts: BenchOptions) -> SuiteOutput:
    """Frames/s of the real collector with each preset's policy (policy on the device, envs on CPU), beside the
    bare collection loop (:class:`~rlcli.bench.floors.policy_gradient.BareActLoop`) where it applies: its
    ``step_over_bare_loop`` is the collector's step over the env step and a bare eager act, measured in one run."""
    cases, ratios = [], []
    for name, cfg in preset_configs(opts).items():
        run = build_run(cfg)
        timer = Timer(run.device)

        # The objects as defaults, as the lambda this replaces held them (a lambda's cannot be typed).
        def collect(run: Run = run, timer: Timer = timer) -> TensorDict:
            return run.source.next_batch(timer)

        params = {"frames_per_batch": cfg.collector.frames_per_batch}
        work = cfg.collector.frames_per_batch
        cases.append(Case("collector", name, params, "frames/s", work, collect, run.close))
        floor = _bare_loop(cfg, run)
        if floor is not None:
            cases.append(Case("collector", f"{name}.bare_loop", params, "frames/s", work, floor.run, floor.close))
            # The collector's step over the floor's: 1.0 would be no bookkeeping at all.
            ratios.append(Ratio("collector", f"{name}.step_over_bare_loop", params, "x", cases[-1].key, cases[-2].key))
    return _team_cases(opts, cases, ratios)


def _bare_loop(cfg: RunConfig, run: Run) -> BareActLoop | None:
    """The bare collection loop of an on-policy preset (flat observations, Discrete or Box actions, no memory, masks
    or observation normalization, on the CPU); None for any other."""
    agent = getattr(run.algo, "agent", None)
    plain = (
        isinstance(agent, ActorCritic)
        and agent.memory is None
        and not cfg.env.normalize_observation
        and run.device.type == "cpu"
        and isinstance(agent.policy, (CategoricalHead, GaussianHead))
        and isinstance(run.source, Collector)
        and run.source.action_mask is None
        and len(run.source.observation_space.shape or ()) == 1
    )
    if not plain:
        return None
    steps = cfg.collector.frames_per_batch // cfg.env.num_envs
    return BareActLoop(agent, make_envs(cfg.env), steps, seed=cfg.run.seed)


TEAM_ENVS = 600
"""The VMAS envs of the team collector cases: a batch as large as the simulator is built for."""


def _team_cases(opts: BenchOptions, cases: list[Case], ratios: list[Ratio]) -> SuiteOutput:
    """For each VMAS scenario of the team presets, at ``TEAM_ENVS`` envs: rlcli's team collector and VMAS stepped
    raw, both with the same random actions from the same start, and the collector's share of raw speed."""
    seen: set[str] = set()
    for cfg in preset_configs(opts, teams=True).values():
        env = cfg.env.model_copy(update={"num_envs": TEAM_ENVS})
        if not env.id.startswith(VMAS_PREFIX) or env.id in seen or opts.device.type != "cpu":
            continue
        seen.add(env.id)
        collector = _TeamSteps(env)
        raw = RawVmas(env.id[len(VMAS_PREFIX) :], TEAM_ENVS, env.kwargs, max_steps=env.max_episode_steps, seed=0)
        params = {"env": env.id, "num_envs": TEAM_ENVS}
        work = TEAM_ENVS * RAW_STEPS
        cases.append(
            Case("collector", "teams", params, "frames/s", work, collector.run, collector.close, open=collector.open)
        )
        cases.append(Case("collector", "teams.raw_vmas", params, "frames/s", work, raw.run, raw.close, open=raw.open))
        ratios.append(Ratio("collector", "teams.share_of_raw_vmas", params, "share", cases[-2].key, cases[-1].key))
    return cases, ratios


class _TeamSteps:
    """The team collector's case: ``RAW_STEPS`` steps a call of :class:`~rlcli.bench.floors.teams.RawVmas`'s random
    actions, through rlcli's VMAS adapter and team collector (the batch, the episode counts), made when opened."""

    def __init__(self, env_cfg: EnvConfig):
        self.env_cfg = env_cfg
        self.collector: TeamCollector | None = None
        self.timer = Timer(torch.device("cpu"))

    def open(self) -> None:
        envs = make_team_envs(self.env_cfg, self.env_cfg.num_envs, seed=0, device=torch.device("cpu"), state=False)
        # A VMAS scenario's (the cases are made for vmas/ ids only): its simulator draws the actions' spaces.
        simulator = getattr(envs, "env", None)
        assert simulator is not None, "a VMAS team"
        acting = ReplayedActions(envs, draws(simulator, self.env_cfg.num_envs, 0))
        self.collector = TeamCollector(envs, acting, steps=RAW_STEPS, device=torch.device("cpu"), seed=0, window=100)

    def run(self) -> TensorDict:
        assert self.collector is not None, "the bench opens a case before it times it"
        return self.collector.next_batch(self.timer)

    def close(self) -> None:
        if self.collector is not None:
            self.collector.close()
            self.collector = None


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

            def advantages(
                f: Callable[..., tuple[torch.Tensor, torch.Tensor]] = function,
                d: list[torch.Tensor] = data,
                e: list[torch.Tensor] = done,
            ) -> tuple[torch.Tensor, torch.Tensor]:
                return f(*d, *e, gamma=0.99, lam=0.95)

            cases.append(
                Case(
                    "advantage",
                    name,
                    params,
                    "elements/s",
                    steps * envs,
                    advantages,
                )
            )
        if shape in ((512, 32), (2048, 16)):
            ratios.append(Ratio("advantage", "gae_speedup", params, "speedup", cases[-2].key, cases[-1].key))
    return cases, ratios
