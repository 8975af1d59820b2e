"""Evaluation of a trained policy on envs of its own: :class:`Evaluator` for a built algorithm
(``rlcli eval``, and the trainer's in-training hook), :func:`evaluate_run` for a run folder or a
checkpoint file, with an optional mp4 of the first episode."""

from __future__ import annotations

import math
import os
import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from rlcli import checkpoint
from rlcli.algos import ALGORITHMS, Algorithm
from rlcli.config.errors import InputError, check_output_file, single
from rlcli.config.load import load_config
from rlcli.devices import resolve_device
from rlcli.envs import check_run_packages, describe_space, import_env_packages

SEED_OFFSET = 1_000_000
"""Added to ``run.seed`` for the default evaluation seed: the training envs were reset with seeds
from ``run.seed`` on, and evaluation episodes should not replay their starting states."""

VIDEO_EXTRA = "pip install 'rlcli[video]' (pip install -e '.[video]' in a clone)"

FrameSink = Callable[[np.ndarray], None]


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
        return {"episodes": self.episodes, "return_mean": self.mean, "return_std": self.std,
                "return_min": self.min, "return_max": self.max, "length_mean": self.length_mean,
                "returns": list(self.returns), "lengths": list(self.lengths)}

    def row(self) -> dict[str, float]:
        """The ``eval/...`` terms of a metrics row."""
        return {"eval/return_mean": self.mean, "eval/return_std": self.std, "eval/length_mean": self.length_mean}


def make_env(cfg, *, render: bool = False, source: str | None = None) -> gym.Env:
    """One env for ``cfg`` (an EnvConfig): the same id, kwargs and ``max_episode_steps`` as training,
    and ``render_mode="rgb_array"`` when ``render``.

    Raises:
        ConfigError: gymnasium cannot make the env.
        InputError: ``render`` for an env that cannot render ``rgb_array`` frames; names the
            modes it has.
    """
    env = _make(cfg, None, source)
    if not render:
        return env
    modes = list(env.metadata.get("render_modes") or [])
    env.close()
    if "rgb_array" not in modes:
        raise InputError("--video", f"{cfg.id} cannot render rgb_array frames; its render modes: "
                                    f"{', '.join(map(str, modes)) or 'none'}")
    try:
        return _make(cfg, "rgb_array", source)
    except Exception as exc:  # noqa: BLE001 - whatever the env raises is about rendering here
        raise InputError("--video", f"{cfg.id} cannot be made with render_mode='rgb_array': "
                                    f"{type(exc).__name__}: {exc}") from None


def _make(cfg, render_mode: str | None, source: str | None) -> gym.Env:
    """``gym.make`` as training configures it; a failure without ``render_mode`` is a ConfigError,
    one with it propagates as raised (the caller blames the rendering)."""
    kwargs = dict(cfg.kwargs)
    if cfg.max_episode_steps is not None:
        kwargs["max_episode_steps"] = cfg.max_episode_steps
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    try:
        return gym.make(cfg.id, **kwargs)
    # As in make_envs: anything an env constructor raises is bad input here.
    except Exception as exc:  # noqa: BLE001
        if render_mode is not None:
            raise
        raise single(source, f"cannot make {cfg.id!r}: {type(exc).__name__}: {exc}", path="env") from None


class Evaluator:
    """Runs ``episodes`` episodes of ``algo.policy`` on env instances of its own.

    Nothing of training is touched: the envs are not the collector's, actions are drawn from
    the evaluator's own generator, and the policy changes no statistics. With ``render``,
    one env with ``render_mode="rgb_array"`` plays the episodes one after the other, so that
    its frames form one video; otherwise ``min(episodes, env.num_envs)`` envs play side by
    side, each a fixed quota of episodes. A fixed quota, rather than the first ``episodes``
    to finish, keeps short episodes (which finish first) from being over-counted.
    """

    def __init__(self, algo: Algorithm, env_cfg, *, episodes: int, deterministic: bool, seed: int,
                 device: torch.device | str, render: bool = False, source: str | None = None):
        """Make the envs; ``source`` names the config in errors.

        Raises:
            ConfigError: gymnasium cannot make the env.
            InputError: ``render`` for an env without ``rgb_array`` rendering.
        """
        if episodes < 1:
            raise ValueError(f"episodes must be at least 1, got {episodes}")
        self.algo, self.env_id = algo, env_cfg.id
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
        space = self.envs[0].action_space
        self.bounds = ((space.low.astype(np.float32), space.high.astype(np.float32))
                       if isinstance(space, spaces.Box) else None)
        self.generator = torch.Generator(device=self.device)

    @property
    def metadata(self) -> dict[str, Any]:
        """The env's metadata (``render_fps`` for a video)."""
        return self.envs[0].metadata

    def __call__(self, seed_offset: int = 0, *, frames_sink: FrameSink | None = None) -> EvalResult:
        """Play exactly ``episodes`` episodes; the same ``seed_offset`` plays the same episodes.

        The envs are reset with seeds spawned from ``seed + seed_offset`` (numpy's SeedSequence,
        so that rounds of nearby offsets share no env seed), and the action generator is re-seeded
        from it. ``frames_sink`` receives each rgb_array frame ([H, W, 3] uint8) of the first
        episode, from the reset on (the evaluator must have been made with ``render``).

        Raises:
            InputError: the env fails to render a frame.
        """
        if frames_sink is not None and not self.render:
            raise ValueError("frames_sink needs an Evaluator made with render=True")
        base = self.seed + seed_offset
        self.generator.manual_seed(base)
        env_seeds = np.random.SeedSequence(base).generate_state(len(self.envs))
        obs = [env.reset(seed=int(s))[0] for env, s in zip(self.envs, env_seeds)]
        returns: list[list[float]] = [[] for _ in self.envs]
        lengths: list[list[int]] = [[] for _ in self.envs]
        running = [0.0] * len(self.envs)
        steps = [0] * len(self.envs)
        recording = frames_sink is not None
        if recording:
            frames_sink(self._frame())
        active = list(range(len(self.envs)))
        while active:
            batch = torch.as_tensor(np.stack([obs[i] for i in active]), dtype=torch.float32, device=self.device)
            actions = self.algo.policy(batch, deterministic=self.deterministic, generator=self.generator)
            actions = actions.cpu().numpy()
            if self.bounds is not None:
                # What the collector does too: a Gaussian policy's samples may leave the bounds.
                actions = np.clip(actions, *self.bounds)
            still = []
            for row, i in enumerate(active):
                obs[i], reward, terminated, truncated, _ = self.envs[i].step(actions[row])
                running[i] += float(reward)
                steps[i] += 1
                if recording:
                    frames_sink(self._frame())
                if not (terminated or truncated):
                    still.append(i)
                    continue
                recording = False
                returns[i].append(running[i])
                lengths[i].append(steps[i])
                running[i], steps[i] = 0.0, 0
                if len(returns[i]) < self.quota[i]:
                    obs[i], _ = self.envs[i].reset()
                    still.append(i)
            active = still
        return EvalResult([r for env in returns for r in env], [n for env in lengths for n in env])

    def _frame(self) -> np.ndarray:
        try:
            frame = self.envs[0].render()
        except Exception as exc:  # noqa: BLE001 - a missing renderer (pygame, mujoco's GL) is bad input
            raise InputError("--video", f"{self.env_id} failed to render a frame: {type(exc).__name__}: "
                                        f"{exc}") from None
        if not isinstance(frame, np.ndarray) or frame.ndim != 3:
            raise InputError("--video", f"{self.env_id} rendered {type(frame).__name__}, not an rgb_array "
                                        "frame [H, W, 3]")
        return frame

    def close(self) -> None:
        for env in self.envs:
            env.close()


@dataclass(frozen=True)
class EvalReport:
    """What :func:`evaluate_run` played and where from."""

    result: EvalResult
    checkpoint: Path
    run_folder: Path
    algo: str
    env: str
    seed: int
    deterministic: bool
    device: str
    video: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {"checkpoint": str(self.checkpoint), "run_folder": str(self.run_folder), "algo": self.algo,
                "env": self.env, "seed": self.seed, "deterministic": self.deterministic, "device": self.device,
                "video": None if self.video is None else str(self.video), **self.result.to_json()}


def evaluate_run(path: str | Path, *, episodes: int = 10, deterministic: bool = True, seed: int | None = None,
                 video: str | Path | None = None, device: str | None = None,
                 env_packages: Sequence[str] | None = None) -> EvalReport:
    """Play a trained run's policy, with its saved normalization, for ``episodes`` episodes.

    ``path`` is a run folder (its ``final.pt``, else its newest ``checkpoints/ckpt-*.pt``) or a
    checkpoint file in one. The config is the run's ``config.toml``; ``env_packages`` (imported)
    must name every module of ``run.json``'s ``env_packages``. ``seed`` defaults to ``run.seed`` +
    :data:`SEED_OFFSET`; ``device`` to the config's ``run.device``. ``video`` records the first
    episode as an mp4 there (written whole or not at all). Nothing is written in the run folder.

    Raises:
        InputError: a missing path or a folder that is not a run; a missing video extra or video
            folder; an env without ``rgb_array`` rendering; an env package that cannot be imported.
        CheckpointError: a damaged checkpoint, or one of another algorithm, env, spaces or networks.
        ConfigError: the run's config does not load or build here (no CUDA, an unknown env).
    """
    # rlcli.run builds the in-training Evaluator of this module.
    from rlcli.run import check_spaces

    video = Path(video) if video is not None else None
    if video is not None:
        _check_video(video)
    folder, weights = find_checkpoint(Path(path))
    check_run_packages(folder, list(env_packages or []))
    import_env_packages(list(env_packages or []))
    config_file = folder / "config.toml"
    cfg = load_config(config_file)
    source = str(config_file)
    what = f"checkpoint {weights}"
    payload = checkpoint.read(weights)
    target = (resolve_device(device, source=f"--device {device}") if device is not None
              else resolve_device(cfg.run.device, source=source))
    # With a video, this also refuses an env without rgb_array frames before anything is built.
    probe = make_env(cfg.env, render=video is not None, source=source)
    obs_space, act_space = probe.observation_space, probe.action_space
    probe.close()
    module = ALGORITHMS[cfg.algo.name]
    check_spaces(cfg.algo.name, module.SUPPORTS, cfg.env.id, obs_space, act_space, source)
    checkpoint.check_origin(payload, algo=cfg.algo.name, env=cfg.env.id, what=what,
                            spaces={"observation": describe_space(obs_space), "action": describe_space(act_space)})
    # As build_run does: initial weights from a forked RNG, so torch's global generator is untouched.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.run.seed)
        algo = module.build(
            _without_replay(cfg.algo), spaces=(obs_space, act_space), network=cfg.network, env=cfg.env,
            collector=cfg.collector, optim=cfg.optim, device=target, seed=cfg.run.seed, run_folder=None,
            source=source,
        )
    checkpoint.restore_agent(algo.agent, payload["agent"], what=what)
    algo.agent.eval()
    eval_seed = cfg.run.seed + SEED_OFFSET if seed is None else seed
    evaluator = Evaluator(algo, cfg.env, episodes=episodes, deterministic=deterministic, seed=eval_seed,
                          device=target, render=video is not None, source=source)
    try:
        if video is None:
            result = evaluator()
        else:
            result = _record(evaluator, video)
    finally:
        evaluator.close()
    return EvalReport(result, weights, folder, cfg.algo.name, cfg.env.id, eval_seed, deterministic, str(target),
                      video)


def find_checkpoint(path: Path) -> tuple[Path, Path]:
    """(run folder, weights file) for a run folder or a checkpoint file in one.

    A folder gives the newer of its ``final.pt`` and its ``checkpoints/ckpt-<frames>.pt`` of most
    frames (``final.pt`` when they are at the same frames): a run resumed and then killed has a
    newer checkpoint than the ``final.pt`` of its first part.
    A file's run folder is the nearest of its folder and the two above holding ``config.toml``
    (``final.pt`` sits in the run folder, ``checkpoints/ckpt-*.pt`` one level down).

    Raises:
        InputError: the path does not exist, or no run folder or weights are found.
    """
    if not path.exists():
        raise InputError(str(path), "no such file or folder; give a run folder or a checkpoint file in one")
    if path.is_dir():
        if not (path / "config.toml").is_file():
            raise InputError(str(path), "not a run folder: there is no config.toml in it")
        final = path / "final.pt"
        # keep_last only matters for saving: nothing is saved here.
        latest = checkpoint.Checkpoints(path, keep_last=1).latest()
        if latest is None and not final.is_file():
            raise InputError(str(path), "the run folder holds no weights yet: no final.pt and no "
                                        "checkpoints/ckpt-*.pt")
        if latest is None:
            return path, final
        if final.is_file() and checkpoint.read(final)["frames"] >= int(latest.stem.removeprefix("ckpt-")):
            return path, final
        return path, latest
    for folder in (path.parent, path.parent.parent):
        if (folder / "config.toml").is_file():
            return folder, path
    raise InputError(f"checkpoint {path}", "no config.toml beside it or in the two folders above: give a run "
                                           "folder, or a final.pt or checkpoints/ckpt-*.pt inside one")


def _without_replay(algo_cfg):
    """``algo_cfg`` with its replay buffer (if any) made small and in memory.

    Evaluation stores no transition; building the run's own buffer would check free memory
    for its full capacity, and for ``memmap`` storage write a probe file into its folder,
    perhaps inside the run folder, which evaluation leaves alone.
    """
    if "replay" not in type(algo_cfg).model_fields:
        return algo_cfg
    replay = algo_cfg.replay.model_copy(update={"storage": "tensor", "device": "cpu", "directory": None,
                                                "capacity": max(algo_cfg.batch_size, 1)})
    return algo_cfg.model_copy(update={"replay": replay})


def _check_video(video: Path) -> None:
    """Raise an InputError unless an mp4 can be written at ``video``: extra installed, folder present."""
    try:
        import imageio  # noqa: F401
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        raise InputError("--video needs the video extra", VIDEO_EXTRA) from None
    check_output_file(video, flag="--video", suffix=".mp4")


def _record(evaluator: Evaluator, video: Path) -> EvalResult:
    """Run ``evaluator`` with its first episode written to ``video`` (H.264 mp4), atomically."""
    import imageio.v2 as imageio

    fps = evaluator.metadata.get("render_fps") or 30
    with tempfile.NamedTemporaryFile(dir=video.parent, prefix=f".{video.name}.", suffix=".mp4",
                                     delete=False) as tmp:
        temporary = Path(tmp.name)
    try:
        # macro_block_size 2: libx264's yuv420p needs even sizes; the default 16 would resize
        # most frames (CartPole's 600 x 400) with a warning.
        writer = imageio.get_writer(temporary, format="FFMPEG", mode="I", fps=fps, codec="libx264",
                                    macro_block_size=2)
        try:
            result = evaluator(frames_sink=writer.append_data)
        finally:
            writer.close()
        # NamedTemporaryFile makes 0600 files; the video gets the usual permissions.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, video)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return result
