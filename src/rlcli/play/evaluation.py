"""Evaluation of a trained agent on envs of its own: :class:`Evaluator`, which ``rlcli eval``
(:mod:`rlcli.play.playback`) and the trainer's in-training evaluation both run, and its
:class:`EvalResult`."""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from gymnasium import Env, spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from rlcli import observations
from rlcli.carry import Carry
from rlcli.collectors.mask_recorder import env_mask
from rlcli.config.errors import InputError
from rlcli.envs import autoreset_mode, eval_envs
from rlcli.envs.masks import KEY

if TYPE_CHECKING:
    from rlcli.algos import Agent


SEED_OFFSET = 1_000_000
"""Added to ``run.seed`` for the default evaluation seed: the training envs were reset with seeds
from ``run.seed`` on, and evaluation episodes should not replay their starting states."""

FrameSink = Callable[[np.ndarray], None]
EpisodeProgress = Callable[[int, int], None]
"""Told ``(episodes finished, episodes in all)`` as an evaluation starts and after each counted episode."""


class Stopped(Exception):
    """An evaluation ended before its episodes: its ``stop`` callable asked for it."""


@dataclass(frozen=True)
class EvalResult:
    """Undiscounted returns and lengths of finished evaluation episodes, in the env's own reward units."""

    returns: list[float]
    lengths: list[int]
    groups: dict[str, list[float]] = field(default_factory=dict)
    """A team's evaluation: each group's return of the same episodes, in order (their sum is ``returns``)."""

    def group(self, name: str) -> EvalResult:
        """Group ``name``'s returns of these episodes, with their lengths."""
        return EvalResult(list(self.groups[name]), list(self.lengths))

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
            **({} if not self.groups else {"groups": {name: self.group(name).to_json() for name in self.groups}}),
        }

    def row(self) -> dict[str, float]:
        """The ``eval/...`` terms of a metrics row (a team's with each group's mean, ``eval/return_mean/<group>``)."""
        groups = {f"eval/return_mean/{name}": self.group(name).mean for name in self.groups}
        return {
            "eval/return_mean": self.mean,
            "eval/return_std": self.std,
            "eval/length_mean": self.length_mean,
        } | groups


def _tell(progress: EpisodeProgress | None, finished: np.ndarray, quota: np.ndarray, told: int) -> int:
    """Tell ``progress`` the episodes counted so far (each env's ``finished`` up to its ``quota``) when more
    than ``told`` were; returns the count. Episodes past an env's quota are played but not counted."""
    counted = int(np.minimum(finished, quota).sum())
    if progress is not None and counted > told:
        progress(counted, int(quota.sum()))
    return counted


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
    """Runs ``episodes`` episodes of ``agent.actions`` on a vector env of its own.

    Nothing of training is touched: the envs are not the collector's, actions are drawn from
    the evaluator's own generator, and the policy changes no statistics. With ``render``,
    one env with ``render_mode="rgb_array"`` plays the episodes one after the other, so that
    its frames form one video; otherwise ``min(episodes, num_envs)`` envs play side by side
    (:func:`rlcli.envs.eval_envs`), one batched ``actions`` call a step, each env a fixed quota of
    episodes. A fixed quota, rather than the first ``episodes`` to finish, keeps short episodes
    (which finish first) from being over-counted; an env past its quota steps on with the others
    and its further episodes are not counted.
    """

    def __init__(
        self,
        agent: Agent | None,
        env_cfg,
        *,
        episodes: int,
        deterministic: bool,
        seed: int,
        device: torch.device | str,
        render: bool = False,
        source: str | None = None,
        num_envs: int | None = None,
    ):
        """Make the envs: ``num_envs`` of them at most (default ``env_cfg.num_envs``); ``source`` names
        the config in errors. ``agent`` may be None until the first evaluation: ``build_run`` makes the
        in-training evaluation before the algorithm (offline, its envs give the spaces) and sets it then.

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
        copies = 1 if render else min(episodes, num_envs or env_cfg.num_envs)
        self.envs = eval_envs(env_cfg, copies, render=render, source=source)
        self.same_step = autoreset_mode(self.envs) is AutoresetMode.SAME_STEP
        self.quota = np.array([episodes // copies + (i < episodes % copies) for i in range(copies)])
        self.observation_space = self.envs.single_observation_space
        space = self.action_space = self.envs.single_action_space
        self.bounds = (
            (space.low.astype(np.float32), space.high.astype(np.float32)) if isinstance(space, spaces.Box) else None
        )
        # Made at the first evaluation: a space no algorithm reads is refused by the build after this.
        self.to_device: observations.ToDevice | None = None
        self.generator = torch.Generator(device=self.device)
        self.masks = env_cfg.action_mask != "none"
        """Whether the agent acts under the masks the envs give in ``info`` (training sets it as it resolved
        ``[env] action_mask``)."""
        self.record = EpisodeRecord(episodes)
        """Every episode played so far (the newest ``episodes`` of them kept)."""

    @property
    def num_envs(self) -> int:
        """The envs that play side by side."""
        return self.envs.num_envs

    @property
    def metadata(self) -> dict[str, Any]:
        """The env's metadata (``render_fps`` for a video)."""
        return self._rendering().metadata if self.render else self.envs.metadata

    def __call__(
        self,
        seed_offset: int = 0,
        *,
        frames_sink: FrameSink | None = None,
        stop: Callable[[], bool] | None = None,
        progress: EpisodeProgress | None = None,
    ) -> EvalResult:
        """Play exactly ``episodes`` episodes; the same ``seed_offset`` plays the same episodes.

        The envs are reset with a seed spawned from ``seed + seed_offset`` (numpy's SeedSequence,
        so that rounds of nearby offsets share no env seed), and the action generator is re-seeded
        from it. ``frames_sink`` receives each rgb_array frame ([H, W, 3] uint8) of the first
        episode, from the reset on (the evaluator must have been made with ``render``).

        ``stop`` is asked after each step; once it says yes, :class:`Stopped` is raised. ``progress`` is told
        the episodes counted so far at the start and after each one.

        Raises:
            InputError: the env fails to render a frame.
            Stopped: ``stop`` said so.
        """
        if frames_sink is not None and not self.render:
            raise ValueError("frames_sink needs an Evaluator made with render=True")
        n = self.num_envs
        obs, carry, masked = self._reset(self.seed + seed_offset)
        returns: list[list[float]] = [[] for _ in range(n)]
        lengths: list[list[int]] = [[] for _ in range(n)]
        running = np.zeros(n)
        steps = np.zeros(n, dtype=np.int64)
        finished = np.zeros(n, dtype=np.int64)
        # NEXT_STEP envs spend the step after an episode's end on their reset: nothing of it counts.
        resetting = np.zeros(n, dtype=bool)
        # The first episode's frames go to the sink; None once it has ended.
        sink = frames_sink
        if sink is not None:
            sink(self._frame())
        told = _tell(progress, finished, self.quota, -1)
        while (finished < self.quota).any():
            if stop is not None and stop():
                raise Stopped
            obs, reward, terminated, truncated, info = self.envs.step(self._actions(obs, carry))
            if masked:
                # The masks of the observations acted on next (a reset's, after a reset step).
                carry.mask = env_mask(info).to(self.device)
            counted = ~resetting
            running += np.where(counted, reward, 0.0)
            steps += counted
            if sink is not None:
                sink(self._frame())
            ended = (terminated | truncated) & counted
            for i in np.flatnonzero(ended):
                if finished[i] < self.quota[i]:
                    returns[i].append(float(running[i]))
                    lengths[i].append(int(steps[i]))
                finished[i] += 1
                sink = None
            told = _tell(progress, finished, self.quota, told)
            running[ended], steps[ended] = 0.0, 0
            # A memory starts afresh where the next observation starts an episode; in NEXT_STEP mode the
            # reset step acts on a final observation, and the step after it starts the episode.
            carry.episode_starts(ended | resetting)
            resetting = np.zeros(n, dtype=bool) if self.same_step else ended
        result = EvalResult([r for env in returns for r in env], [k for env in lengths for k in env])
        self.record.add(result)
        return result

    def _reset(self, base: int) -> tuple[Any, Carry, bool]:
        """Reset the envs with seeds spawned from ``base`` and re-seed the action generator from it;
        returns their first observations, the carry of fresh envs (with their masks) and whether the
        agent acts under masks."""
        self.generator.manual_seed(base)
        # One seed for the vector (env i takes seed + i, or the vector entry point's own rule: ale-py's
        # and CartPole's take no list), spawned so that nearby bases share no env seed.
        obs, info = self.envs.reset(seed=int(np.random.SeedSequence(base).generate_state(1)[0]))
        carry = Carry.of(self.agent, self.num_envs, self.device)
        masked = self.masks and KEY in info
        if masked:
            carry.mask = env_mask(info).to(self.device)
        return obs, carry, masked

    def _actions(self, obs, carry: Carry) -> np.ndarray:
        """The envs' actions for their observations ``obs``, as the envs take them; ``carry`` advanced."""
        if self.to_device is None:
            self.to_device = observations.ToDevice(self.observation_space, self.num_envs, self.device)
        assert self.agent is not None, "build_run sets the evaluation's agent before it plays"
        chosen = self.agent.actions(
            self.to_device(obs), deterministic=self.deterministic, generator=self.generator, carry=carry
        )
        actions = chosen.cpu().numpy()
        # What the collector does too: a Gaussian policy's samples may leave the bounds.
        return actions if self.bounds is None else np.clip(actions, *self.bounds)

    def _rendering(self) -> Env:
        """The one env that draws the frames of an evaluator made with ``render``."""
        # With render, eval_envs makes a SyncVectorEnv of that one env.
        assert isinstance(self.envs, SyncVectorEnv)
        return self.envs.envs[0]

    def _frame(self) -> np.ndarray:
        try:
            frame = self._rendering().render()
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
        self.envs.close()
