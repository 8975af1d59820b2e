"""A policy played on its env as a dataset: a trained run's, with the run's observation normalization
applied when acting and raw observations stored, or uniformly random actions (a random baseline)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from rlcli import observations
from rlcli.carry import Carry
from rlcli.collectors.mask_recorder import as_masks, env_mask
from rlcli.config.errors import InputError
from rlcli.config.load import load_config
from rlcli.datasets import import_minari
from rlcli.datasets.recording.writing import Episode, Recorded, write_dataset
from rlcli.envs import check_run_packages, import_env_packages, make_env
from rlcli.envs.masks import KEY
from rlcli.play.playback import restored_agent
from rlcli.runtime.devices import resolve_device
from rlcli.trainer.checkpoint_folder import find_checkpoint

Progress = Callable[[int, int], None]
"""Called with (steps done, steps planned) as a recording goes."""


@dataclass(frozen=True)
class Acting:
    """How the played policy picks each action.

    The policy's mode (``deterministic``) or a sample; then, for Box actions, Gaussian noise of ``noise``
    half-ranges, and with probability ``epsilon`` a uniformly random action instead; clipped to the
    bounds. ``seed`` seeds the env, the noise and the policy's sampling.
    """

    deterministic: bool = True
    epsilon: float = 0.0
    noise: float = 0.0
    seed: int = 0
    masks: bool = True
    """Whether the env's action masks (``info["action_mask"]``) constrain the policy and epsilon."""

    def describe(self) -> str:
        mode = "deterministic" if self.deterministic else "stochastic"
        return f"{mode}, noise {self.noise}, epsilon {self.epsilon}, seed {self.seed}"


def record_policy(
    path: str | Path,
    *,
    steps: int,
    out: str,
    deterministic: bool = True,
    epsilon: float = 0.0,
    noise: float = 0.0,
    seed: int = 0,
    overwrite: bool = False,
    device: str | None = None,
    env_packages: Sequence[str] = (),
    progress: Progress | None = None,
) -> Recorded:
    """Play the policy of the run folder or checkpoint ``path`` for ``steps`` env steps and write them as
    the Minari dataset ``out``.

    Acting is as :class:`Acting` says. The episode in progress when ``steps`` is reached ends there,
    truncated.

    Raises:
        InputError: ``path`` is not a run, the output exists (without ``overwrite``), noise on Discrete
            actions, minari is missing, or the disk is full.
        CheckpointError: a damaged checkpoint, or one that does not fit its config.
    """
    import_minari("rlcli collect")
    folder, weights = find_checkpoint(Path(path))
    check_run_packages(folder, list(env_packages))
    import_env_packages(list(env_packages))
    cfg = load_config(folder / "config.toml")
    source = str(folder / "config.toml")
    target = resolve_device(device if device is not None else cfg.run.device, source=source)
    agent = restored_agent(cfg, weights, target, render=False, source=source)
    acting = Acting(deterministic, epsilon, noise, seed, masks=cfg.env.action_mask != "none")
    episodes, spec = _played(cfg.env, agent, acting, steps=steps, device=target, progress=progress, source=source)
    written = write_dataset(
        out,
        episodes,
        env_spec=spec,
        algorithm=f"rlcli {cfg.algo.name}",
        description=f"{cfg.algo.name} policy of {folder} ({weights.name}), {acting.describe()}",
        overwrite=overwrite,
    )
    return Recorded.of(written, episodes, weights)


def _played(
    env_cfg, agent, acting: Acting, *, steps: int, device: torch.device, progress: Progress | None, source: str
) -> tuple[list[Episode], Any]:
    """The episodes of ``agent`` played on a new env of ``env_cfg`` (an EnvConfig from ``source``), and
    the env's spec.

    Raises:
        InputError: ``acting`` adds Gaussian noise to actions that are not Box.
    """
    env = make_env(env_cfg, source=source)
    try:
        if acting.noise > 0 and not isinstance(env.action_space, spaces.Box):
            raise InputError(
                "--noise",
                f"{env_cfg.id} has {env.action_space} actions: Gaussian noise needs Box actions; use --epsilon",
            )
        return play(env, agent, acting, steps=steps, device=device, progress=progress), env.spec
    finally:
        env.close()


def record_random(
    env_cfg, *, steps: int, out: str, seed: int = 0, overwrite: bool = False, progress: Progress | None = None
) -> Recorded:
    """Write ``steps`` steps of uniformly random actions on the env of ``env_cfg`` (an EnvConfig) as the
    Minari dataset ``out``: the random baseline of a normalized score, and a stand-in dataset for the bench."""
    env = make_env(env_cfg)
    try:
        episodes = play(
            env,
            _Uniform(env.action_space, seed),
            Acting(deterministic=False, seed=seed),
            steps=steps,
            device=torch.device("cpu"),
            progress=progress,
        )
        spec = env.spec
    finally:
        env.close()
    written = write_dataset(
        out,
        episodes,
        env_spec=spec,
        algorithm="uniform random actions",
        description=f"uniformly random actions, seed {seed}",
        overwrite=overwrite,
    )
    return Recorded.of(written, episodes, Path(env_cfg.id))


def play(
    env: gym.Env, agent, acting: Acting, *, steps: int, device: torch.device, progress: Progress | None = None
) -> list[Episode]:
    """``steps`` steps of ``agent`` (anything with ``actions(obs, deterministic=, generator=)``) on ``env``,
    acting as ``acting`` says, as episodes (the last cut by truncation)."""
    space = env.action_space
    space.seed(acting.seed)
    rng = np.random.default_rng(acting.seed)
    generator = torch.Generator(device=device).manual_seed(acting.seed)
    episodes: list[Episode] = []
    obs, info = env.reset(seed=acting.seed)
    current = _new_episode(obs)
    carry = Carry.of(agent, 1, device)
    # The env's masks reach the policy, and epsilon's random actions, as in training (rlcli.envs.masks).
    masked = acting.masks and KEY in info
    for done_steps in range(1, steps + 1):
        batch = observations.batch_tensor(env.observation_space, [obs], device)
        if masked:
            carry.mask = env_mask(info)[None].to(device)
        chosen = agent.actions(batch, deterministic=acting.deterministic, generator=generator, carry=carry)
        action = _perturbed(chosen[0].cpu().numpy(), space, acting, rng, info if masked else None)
        obs, reward, terminated, truncated, info = env.step(action)
        carry.episode_starts(np.array([terminated or truncated]))
        for key, value in (
            ("observations", obs),
            ("actions", action),
            ("rewards", reward),
            ("terminations", terminated),
            ("truncations", truncated),
        ):
            current[key].append(value)
        last = done_steps == steps
        if terminated or truncated or last:
            if last and not (terminated or truncated):
                current["truncations"][-1] = True
            episodes.append(_arrays(current))
            if not last:
                obs, info = env.reset()
                current = _new_episode(obs)
        if progress is not None and (done_steps % 1000 == 0 or last):
            progress(done_steps, steps)
    return episodes


def _perturbed(
    action: np.ndarray, space: spaces.Space, acting: Acting, rng: np.random.Generator, info: dict | None = None
) -> Any:
    """``action`` with ``acting``'s noise (Box: then clipped to the bounds) and, with probability epsilon,
    replaced by a sample of ``space`` (among the actions the mask of ``info`` allows, when given)."""
    if isinstance(space, spaces.Box):
        if acting.noise > 0:
            action = action + acting.noise * (space.high - space.low) / 2 * rng.standard_normal(action.shape)
        action = np.clip(action, space.low, space.high).astype(space.dtype)
    if acting.epsilon > 0 and rng.random() < acting.epsilon:
        action = space.sample() if info is None else space.sample(mask=_sample_mask(space, info))
    # A Discrete env may index tables with its action (Taxi): a Python int, never a 0-d array.
    return int(action) if isinstance(space, spaces.Discrete) else action


def _sample_mask(space: spaces.Space, info: dict) -> Any:
    """The mask of ``info`` as gymnasium's ``space.sample(mask=)`` takes it: int8, one per sub-action of a
    MultiDiscrete."""
    mask = as_masks(info[KEY]).astype(np.int8)
    if isinstance(space, spaces.MultiDiscrete):
        return tuple(np.split(mask, np.cumsum(space.nvec)[:-1]))
    return mask


def _new_episode(obs) -> dict[str, list]:
    return {"observations": [obs], "actions": [], "rewards": [], "terminations": [], "truncations": []}


def _arrays(episode: dict[str, list]) -> Episode:
    return {
        "observations": observations.stack(episode["observations"]),
        "actions": np.stack(episode["actions"]),
        "rewards": np.asarray(episode["rewards"], dtype=np.float64),
        "terminations": np.asarray(episode["terminations"], dtype=bool),
        "truncations": np.asarray(episode["truncations"], dtype=bool),
    }


class _Uniform:
    """An agent of uniformly random actions (its own seeded space): a dataset's random baseline."""

    def __init__(self, space: spaces.Space, seed: int):
        self.space = space
        self.space.seed(seed)

    memory = None
    samples = True

    def actions(self, observation, *, deterministic: bool, generator, carry=None) -> torch.Tensor:
        return torch.as_tensor(np.stack([self.space.sample() for _ in range(observation.shape[0])]))
