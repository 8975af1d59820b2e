"""Evaluation of a trained team on team envs of its own: the :class:`~rlcli.play.evaluation.Evaluator` of
team runs, with the same calls and results (the return of an episode is the sum over groups of each group's
return, as training counts it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from rlcli import keys
from rlcli.collectors.teams import Finished, TeamEpisodes
from rlcli.config.errors import InputError
from rlcli.envs.teams import ALIVE, DONE, make_team_envs, team_kind
from rlcli.play.evaluation import EpisodeProgress, EpisodeRecord, EvalResult, Evaluator, Stopped, _tell


class TeamEvaluator:
    """Runs ``episodes`` episodes of a team agent's ``actions`` on ``min(episodes, num_envs)`` team envs of
    its own, each env a fixed quota of episodes (as :class:`~rlcli.play.evaluation.Evaluator` does)."""

    def __init__(
        self,
        agent: Any,
        env_cfg,
        *,
        episodes: int,
        deterministic: bool,
        seed: int,
        device: torch.device | str,
        source: str | None = None,
        num_envs: int | None = None,
        render: bool = False,
    ):
        if episodes < 1:
            raise ValueError(f"episodes must be at least 1, got {episodes}")
        self.agent, self.env_id = agent, env_cfg.id
        self.episodes, self.deterministic, self.seed = episodes, deterministic, seed
        self.device = torch.device(device)
        self.render = render
        copies = min(episodes, num_envs or env_cfg.num_envs)
        # Acting never reads the state: only a critic does. With ``render`` the first env draws the video.
        self.envs = make_team_envs(
            env_cfg, copies, seed=seed, device=self.device, source=source, state=False, render=render
        )
        self.layout = self.envs.layout
        self.quota = np.array([episodes // copies + (i < episodes % copies) for i in range(copies)])
        self.observation_space = self.layout.groups[0].observation_space
        self.action_space = self.layout.groups[0].action_space
        self.generator = torch.Generator(device=self.device)
        self.record = EpisodeRecord(episodes)

    @property
    def num_envs(self) -> int:
        return self.envs.num_envs

    @property
    def metadata(self) -> dict:
        """The env's metadata (``render_fps`` for a video, where the env gives one)."""
        return dict(getattr(self.envs, "metadata", None) or {})

    def __call__(
        self,
        seed_offset: int = 0,
        *,
        frames_sink: Callable[[np.ndarray], None] | None = None,
        stop: Callable[[], bool] | None = None,
        progress: EpisodeProgress | None = None,
    ) -> EvalResult:
        """Play exactly ``episodes`` episodes; the same ``seed_offset`` plays the same episodes. ``frames_sink``
        receives each rgb_array frame of the first env's first episode, from the reset on, up to the step
        before its last (the env resets in the step that ends it); the evaluator must have been made with
        ``render``."""
        if frames_sink is not None and not self.render:
            raise ValueError("frames_sink needs a TeamEvaluator made with render=True")
        base = self.seed + seed_offset
        self.generator.manual_seed(base)
        n = self.num_envs
        start = self.envs.reset(int(np.random.SeedSequence(base).generate_state(1)[0])).to(self.device).clone()
        stats = TeamEpisodes(self.layout.names, n, 1, self.device)
        kept = _Kept(self.quota, self.layout.names)
        told = _tell(progress, kept.finished, self.quota, -1)
        assert self.agent is not None, "build_run sets the evaluation's agent before it plays"
        carry = self.agent.carry(n, self.device)
        starting = torch.ones(n, dtype=torch.bool, device=self.device)
        sink = frames_sink
        if sink is not None:
            sink(self._frame())
        while (kept.finished < self.quota).any():
            if stop is not None and stop():
                raise Stopped
            carry.episode_starts(start, starting)
            chosen = self.agent.actions(start, deterministic=self.deterministic, generator=self.generator, carry=carry)
            actions = {name: chosen.get(name).get(keys.ACTION) for name in self.layout.names}
            after, fresh = self.envs.step(actions)
            after = after.to(self.device)
            kept.take(
                stats.step(
                    {name: after.get(name).get("reward") for name in self.layout.names},
                    {name: start.get(name).get(ALIVE) for name in self.layout.names},
                    after.get(DONE),
                )
            )
            told = _tell(progress, kept.finished, self.quota, told)
            if sink is not None:
                # The first env's first episode only: it resets in the step that ends it.
                if kept.finished[0] > 0:
                    sink = None
                else:
                    sink(self._frame())
            start = fresh.to(self.device).clone()
            starting = after.get(DONE).clone()
        result = kept.result()
        self.record.add(result)
        return result

    def _frame(self) -> np.ndarray:
        """The first env's frame; an InputError when the env draws none."""
        frame = self.envs.render()
        if not isinstance(frame, np.ndarray) or frame.ndim != 3:
            raise InputError(
                "--video", f"{self.env_id} draws no rgb_array frames (its render gave {type(frame).__name__})"
            )
        return frame

    def close(self) -> None:
        self.envs.close()


class _Kept:
    """The episodes an evaluation counts, each env's first ``quota`` in order: returns, lengths, each group's."""

    def __init__(self, quota: np.ndarray, names: tuple[str, ...]):
        n = len(quota)
        self.quota = quota
        self.finished = np.zeros(n, dtype=np.int64)
        self.returns: list[list[float]] = [[] for _ in range(n)]
        self.lengths: list[list[int]] = [[] for _ in range(n)]
        self.groups: dict[str, list[list[float]]] = {name: [[] for _ in range(n)] for name in names}

    def take(self, ended: Finished | None) -> None:
        """Count the episodes a step ended, those past an env's quota played but not kept."""
        for k, i in enumerate([] if ended is None else ended.envs):
            assert ended is not None
            if self.finished[i] < self.quota[i]:
                self.returns[i].append(ended.returns[k])
                self.lengths[i].append(ended.lengths[k])
                for name, values in self.groups.items():
                    values[i].append(ended.groups[name][k])
            self.finished[i] += 1

    def result(self) -> EvalResult:
        return EvalResult(
            [r for env in self.returns for r in env],
            [k for env in self.lengths for k in env],
            {name: [r for env in values for r in env] for name, values in self.groups.items()},
        )


def evaluator(agent: Any, env_cfg, **kwargs: Any) -> Evaluator | TeamEvaluator:
    """The evaluation of ``env_cfg``'s env: a :class:`TeamEvaluator` for a team env, else an
    :class:`~rlcli.play.evaluation.Evaluator` (``kwargs`` as they take them)."""
    if team_kind(env_cfg.id) is not None:
        return TeamEvaluator(agent, env_cfg, **kwargs)
    return Evaluator(agent, env_cfg, **kwargs)
