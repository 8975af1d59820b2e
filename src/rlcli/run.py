"""``build_run``: the one place where a config's components meet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from tensordict import TensorDict

from rlcli.algos import ALGORITHMS
from rlcli.collectors import RolloutCollector
from rlcli.config.errors import single
from rlcli.config.schema import RunConfig
from rlcli.devices import resolve_device
from rlcli.envs import describe_space, make_envs
from rlcli.loggers import check_backends
from rlcli.models.actor_critic import ActorCritic
from rlcli.normalization import RewardScaler
from rlcli.optim import GradientStep
from rlcli.timing import Timer


class OnPolicyAlgorithm(Protocol):
    """What the trainer needs of an on-policy algorithm."""

    agent: ActorCritic
    step: GradientStep

    def seed(self, seed: int) -> None: ...

    def advantages(self, batch: TensorDict) -> TensorDict: ...

    def loss(self, batch: TensorDict) -> dict[str, torch.Tensor]: ...

    def update(self, batch: TensorDict, timer: Timer) -> dict[str, float]: ...

    def state_dict(self) -> dict: ...


@dataclass
class Run:
    """Everything a training run needs, built and wired, nothing started."""

    cfg: RunConfig
    device: torch.device
    envs: VectorEnv
    algo: OnPolicyAlgorithm
    collector: RolloutCollector
    reward_scaler: RewardScaler
    iterations: int

    def close(self) -> None:
        self.envs.close()


def build_run(cfg: RunConfig, *, source: str | None = None) -> Run:
    """Build envs, networks, algorithm and collector for ``cfg``.

    Networks are initialised from ``run.seed`` inside a forked RNG, and actions
    and minibatches are drawn from generators of their own, so torch's global
    generator is neither used nor changed. Sets torch's thread count (process-wide).

    Raises:
        ConfigError: when the config validates but cannot run here (no CUDA,
            env that fails to make, spaces the algorithm does not support).
    """
    device = resolve_device(cfg.run.device, source=source)
    check_backends(cfg.logger, source=source)
    torch.set_num_threads(cfg.run.threads)
    envs = make_envs(cfg.env, source=source)
    try:
        module = ALGORITHMS[cfg.algo.name]
        obs_space, act_space = envs.single_observation_space, envs.single_action_space
        check_spaces(cfg.algo.name, module.SUPPORTS, cfg.env.id, obs_space, act_space, source)
        iterations = cfg.collector.total_frames // cfg.collector.frames_per_batch
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.run.seed)
            algo = module.build(
                cfg.algo, spaces=(obs_space, act_space), network=cfg.network, env=cfg.env,
                optim=cfg.optim, iterations=iterations, device=device,
            )
        algo.seed(cfg.run.seed)
        reward_scaler = RewardScaler(cfg.env.num_envs, gamma=cfg.algo.gamma, enabled=cfg.env.normalize_reward)
        collector = RolloutCollector(
            envs, algo.agent, steps=cfg.collector.frames_per_batch // cfg.env.num_envs,
            device=device, reward_scaler=reward_scaler, seed=cfg.run.seed,
        )
    except BaseException:
        envs.close()
        raise
    return Run(cfg, device, envs, algo, collector, reward_scaler, iterations)


def check_spaces(
    algo: str,
    supports: dict[str, tuple[type[spaces.Space], ...]],
    env_id: str,
    observation: spaces.Space,
    action: spaces.Space,
    source: str | None,
) -> None:
    """Raise a ConfigError naming the env, the space and what is supported, unless ``algo`` serves both."""
    for role, space, path in (("observation", observation, "env.id"), ("action", action, "algo.name")):
        allowed = supports[role]
        flat_ok = not isinstance(space, spaces.Box) or len(space.shape) == 1
        if not isinstance(space, allowed) or not flat_ok:
            names = ", ".join(f"1-D {c.__name__}" if c is spaces.Box else c.__name__ for c in allowed)
            raise single(source, f"{env_id} has {role} space {space}, which {algo} does not support; "
                                 f"supported {role} spaces: {names}", path=path)


def check_build(cfg: RunConfig, *, source: str | None = None) -> str:
    """Build every component of ``cfg`` without training and close it; returns a one-line summary."""
    run = build_run(cfg, source=source)
    try:
        params = sum(p.numel() for p in run.algo.agent.parameters())
        return (f"{cfg.algo.name} on {cfg.env.id}: observation "
                f"{describe_space(run.envs.single_observation_space)}, action "
                f"{describe_space(run.envs.single_action_space)}, {params:,} parameters, {run.device}")
    finally:
        run.close()

