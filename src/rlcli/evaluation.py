"""Evaluation of a trained agent on envs of its own: :class:`Evaluator`, which ``rlcli eval``
(:mod:`rlcli.playback`) and the trainer's in-training evaluation both run, and its
:class:`EvalResult`."""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from rlcli import observations
from rlcli.carry import Carry
from rlcli.config.errors import InputError
from rlcli.envs import make_env
from rlcli.envs.masks import KEY
from rlcli.masking import env_mask

if TYPE_CHECKING:
    from rlcli.algos import Agent


SEED_OFFSET = 1_000_000
"""Added to ``run.seed`` for the default evaluation seed: the training envs were reset with seeds
from ``run.seed`` on, and evaluation episodes should not replay their starting states."""

FrameSink = Callable[[np.ndarray], None]


class Stopped(Exception):
    """An evaluation ended before its episodes: its ``stop`` callable asked for it."""


@dataclass(frozen=True)
class EvalResult:
    """Undiscounted returns and lengths of finished evaluation episodes, in the env's own reward units."""

    returns: list[float]
    lengths: list[int]

    @property
    def episodes(self) -> int:
        return len(self.returns)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.returns) if self.returns else math.nan

    @property
    def std(self) -> float:
        """The population standard deviation (divided by N, not N - 1): the spread of these episodes."""
        return statistics.pstdev(self.returns) if self.returns else math.nan

    @property
    def min(self) -> float:
        return min(self.returns) if self.returns else math.nan

    @property
    def max(self) -> float:
        return max(self.returns) if self.returns else math.nan

    @property
    def length_mean(self) -> float:
        return statistics.fmean(self.lengths) if self.lengths else math.nan

    def to_json(self) -> dict[str, Any]:
        return {
            "episodes": self.episodes,
            "return_mean": self.mean,
            "return_std": self.std,
            "return_min": self.min,
            "return_max": self.max,
            "length_mean": self.length_mean,
            "returns": list(self.returns),
            "lengths": list(self.lengths),
        }

    def row(self) -> dict[str, float]:
        """The ``eval/...`` terms of a metrics row."""
        return {"eval/return_mean": self.mean, "eval/return_std": self.std, "eval/length_mean": self.length_mean}


class EpisodeRecord:
    """Finished episodes as gymnasium's ``RecordEpisodeStatistics`` counts them (:class:`rlcli.sources.Episodes`):
    an evaluator's, which an offline run's return column reads."""

    def __init__(self, window: int):
        self.episode_count = 0
        self.return_queue: deque = deque(maxlen=window)
        self.length_queue: deque = deque(maxlen=window)

    def add(self, result: EvalResult) -> None:
        self.return_queue.extend(result.returns)
        self.length_queue.extend(result.lengths)
        self.episode_count += result.episodes


class Evaluator:
    """Runs ``episodes`` episodes of ``agent.actions`` on env instances of its own.

    Nothing of training is touched: the envs are not the collector's, actions are drawn from
    the evaluator's own generator, and the policy changes no statistics. With ``render``,
    one env with ``render_mode="rgb_array"`` plays the episodes one after the other, so that
    its frames form one video; otherwise ``min(episodes, env.num_envs)`` envs play side by
    side, each a fixed quota of episodes. A fixed quota, rather than the first ``episodes``
    to finish, keeps short episodes (which finish first) from being over-counted.
    """

    def __init__(
        self,
        agent: Agent,
        env_cfg,
        *,
        episodes: int,
        deterministic: bool,
        seed: int,
        device: torch.device | str,
        render: bool = False,
        source: str | None = None,
    ):
        """Make the envs; ``source`` names the config in errors.

        Raises:
            ConfigError: gymnasium cannot make the env.
            InputError: ``render`` for an env without ``rgb_array`` rendering.
        """
        if episodes < 1:
            raise ValueError(f"episodes must be at least 1, got {episodes}")
        self.agent, self.env_id = agent, env_cfg.id
        self.episodes, self.deterministic, self.seed = episodes, deterministic, seed
        self.device = torch.device(device)
        self.render = render
        copies = 1 if render else min(episodes, env_cfg.num_envs)
        self.envs: list[gym.Env] = []
        try:
            for _ in range(copies):
                self.envs.append(make_env(env_cfg, render=render, source=source))
        except BaseException:
            self.close()
            raise
        self.quota = [episodes // copies + (i < episodes % copies) for i in range(copies)]
        self.observation_space = self.envs[0].observation_space
        space = self.action_space = self.envs[0].action_space
        self.bounds = (
            (space.low.astype(np.float32), space.high.astype(np.float32)) if isinstance(space, spaces.Box) else None
        )
        self.generator = torch.Generator(device=self.device)
        self.masks = env_cfg.action_mask != "none"
        """Whether the agent acts under the masks the envs give in ``info`` (training sets it as it resolved
        ``[env] action_mask``)."""
        self.record = EpisodeRecord(episodes)
        """Every episode played so far (the newest ``episodes`` of them kept)."""

    @property
    def metadata(self) -> dict[str, Any]:
        """The env's metadata (``render_fps`` for a video)."""
        return self.envs[0].metadata

    def __call__(
        self, seed_offset: int = 0, *, frames_sink: FrameSink | None = None, stop: Callable[[], bool] | None = None
    ) -> EvalResult:
        """Play exactly ``episodes`` episodes; the same ``seed_offset`` plays the same episodes.

        The envs are reset with seeds spawned from ``seed + seed_offset`` (numpy's SeedSequence,
        so that rounds of nearby offsets share no env seed), and the action generator is re-seeded
        from it. ``frames_sink`` receives each rgb_array frame ([H, W, 3] uint8) of the first
        episode, from the reset on (the evaluator must have been made with ``render``).

        ``stop`` is asked after each step; once it says yes, :class:`Stopped` is raised.

        Raises:
            InputError: the env fails to render a frame.
            Stopped: ``stop`` said so.
        """
        if frames_sink is not None and not self.render:
            raise ValueError("frames_sink needs an Evaluator made with render=True")
        obs, carry, masked = self._reset(self.seed + seed_offset)
        returns: list[list[float]] = [[] for _ in self.envs]
        lengths: list[list[int]] = [[] for _ in self.envs]
        running = [0.0] * len(self.envs)
        steps = [0] * len(self.envs)
        recording = frames_sink is not None
        if recording:
            frames_sink(self._frame())
        active = list(range(len(self.envs)))
        while active:
            if stop is not None and stop():
                raise Stopped
            actions = self._actions([obs[i] for i in active], active, carry)
            still = []
            ended = np.zeros(len(self.envs), dtype=bool)
            for row, i in enumerate(active):
                obs[i], reward, terminated, truncated, info = self.envs[i].step(actions[row])
                if masked:
                    # The mask of the observation acted on next (a reset below replaces it).
                    carry.mask[i] = env_mask(info).to(self.device)
                running[i] += float(reward)
                steps[i] += 1
                if recording:
                    frames_sink(self._frame())
                if not (terminated or truncated):
                    still.append(i)
                    continue
                ended[i] = True
                recording = False
                returns[i].append(running[i])
                lengths[i].append(steps[i])
                running[i], steps[i] = 0.0, 0
                if len(returns[i]) < self.quota[i]:
                    obs[i], info = self.envs[i].reset()
                    if masked:
                        carry.mask[i] = env_mask(info).to(self.device)
                    still.append(i)
            active = still
            carry.episode_starts(ended)
        result = EvalResult([r for env in returns for r in env], [n for env in lengths for n in env])
        self.record.add(result)
        return result

    def _reset(self, base: int) -> tuple[list, Carry, bool]:
        """Reset the envs with seeds spawned from ``base`` and re-seed the action generator from it;
        returns their first observations, the carry of fresh envs (with their masks) and whether the
        agent acts under masks."""
        self.generator.manual_seed(base)
        env_seeds = np.random.SeedSequence(base).generate_state(len(self.envs))
        obs, infos = zip(*(env.reset(seed=int(s)) for env, s in zip(self.envs, env_seeds)))
        carry = Carry.of(self.agent, len(self.envs), self.device)
        masked = self.masks and KEY in infos[0]
        if masked:
            carry.mask = torch.stack([env_mask(info) for info in infos]).to(self.device)
        return list(obs), carry, masked

    def _actions(self, obs: list, active: list[int], carry: Carry) -> np.ndarray:
        """The actions of the envs at ``active`` for their observations ``obs``, as the envs take them;
        only their rows of ``carry`` are read and advanced."""
        batch = observations.batch_tensor(self.observation_space, obs, self.device)
        step = carry if len(active) == len(self.envs) else carry.select(active)
        actions = self.agent.actions(batch, deterministic=self.deterministic, generator=self.generator, carry=step)
        if step is not carry:
            carry.put(active, step)
        actions = actions.cpu().numpy()
        # What the collector does too: a Gaussian policy's samples may leave the bounds.
        return actions if self.bounds is None else np.clip(actions, *self.bounds)

    def _frame(self) -> np.ndarray:
        try:
            frame = self.envs[0].render()
        except Exception as exc:  # noqa: BLE001 - a missing renderer (pygame, mujoco's GL) is bad input
            raise InputError(
                "--video", f"{self.env_id} failed to render a frame: {type(exc).__name__}: {exc}"
            ) from None
        if not isinstance(frame, np.ndarray) or frame.ndim != 3:
            raise InputError(
                "--video", f"{self.env_id} rendered {type(frame).__name__}, not an rgb_array frame [H, W, 3]"
            )
        return frame

    def close(self) -> None:
        for env in self.envs:
            env.close()
