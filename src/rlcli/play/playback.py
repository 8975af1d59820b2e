"""Playback of a trained run: ``rlcli eval``'s :func:`evaluate_run` on a run folder or a checkpoint
file, with an optional mp4 of the first episode."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn

from rlcli.algos import ALGORITHMS, check_run_spaces
from rlcli.algos.context import BuildContext
from rlcli.config.errors import InputError, check_output_file
from rlcli.config.load import load_config
from rlcli.envs import check_run_packages, describe_space, import_env_packages, make_env
from rlcli.envs.teams import make_team_envs, team_kind
from rlcli.files import replacing
from rlcli.play.evaluation import SEED_OFFSET, EpisodeProgress, EvalResult, Evaluator
from rlcli.play.team_evaluation import TeamEvaluator
from rlcli.play.team_evaluation import evaluator as make_evaluator
from rlcli.runtime.devices import resolve_device
from rlcli.trainer import checkpoint
from rlcli.trainer.checkpoint_folder import find_checkpoint

VIDEO_EXTRA = "pip install 'rlcli[video]' (pip install -e '.[video]' in a clone)"


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
    policy: Path | None = None
    """The exported file played beside the run's policy (``--policy``), if any."""
    policy_result: EvalResult | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "checkpoint": str(self.checkpoint),
            "run_folder": str(self.run_folder),
            "algo": self.algo,
            "env": self.env,
            "seed": self.seed,
            "deterministic": self.deterministic,
            "device": self.device,
            "video": None if self.video is None else str(self.video),
            **self.result.to_json(),
            **(
                {}
                if self.policy_result is None
                else {"policy": str(self.policy), "policy_result": self.policy_result.to_json()}
            ),
        }


def evaluate_run(
    path: str | Path,
    *,
    episodes: int = 10,
    deterministic: bool = True,
    seed: int | None = None,
    video: str | Path | None = None,
    device: str | None = None,
    env_packages: Sequence[str] | None = None,
    policy: str | Path | None = None,
    progress: EpisodeProgress | None = None,
) -> EvalReport:
    """Play a trained run's policy, with its saved normalization, for ``episodes`` episodes.

    ``path`` is a run folder (its ``final.pt``, else its newest ``checkpoints/ckpt-*.pt``) or a
    checkpoint file in one. The config is the run's ``config.toml``; ``env_packages`` (imported)
    must name every module of ``run.json``'s ``env_packages``. ``seed`` defaults to ``run.seed`` +
    :data:`SEED_OFFSET`; ``device`` to the config's ``run.device``. ``video`` records the first
    episode as an mp4 there (written whole or not at all). Nothing is written in the run folder.
    Only the agent is built (no optimizer, no replay buffer). ``policy``, a file of ``rlcli export``, is
    played after the run's policy on the same episodes (same seeds), its result in ``policy_result``.
    ``progress`` is told each play's episodes as they finish.

    Raises:
        InputError: a missing path or a folder that is not a run; a missing video extra or video
            folder; an env without ``rgb_array`` rendering; an env package that cannot be imported; a
            ``policy`` file that cannot be read, or was exported for another env or spaces, or in the other
            mode (a file of ``rlcli export --stochastic`` is played with ``deterministic`` off, any other with it on).
        CheckpointError: a damaged checkpoint, or one of another algorithm, env, spaces or networks.
        ConfigError: the run's config does not load or build here (no CUDA, an unknown env).
    """
    video = Path(video) if video is not None else None
    if video is not None:
        _check_video(video)
    folder, weights = find_checkpoint(Path(path))
    check_run_packages(folder, list(env_packages or []))
    import_env_packages(list(env_packages or []))
    config_file = folder / "config.toml"
    cfg = load_config(config_file)
    source = str(config_file)
    if policy is not None and team_kind(cfg.env.id) is not None:
        raise InputError(
            "--policy",
            f"{cfg.env.id} is a team env: eval --policy plays one single-agent file, and a team run's are one per "
            "group; playing them beside the run is not supported yet",
        )
    target = (
        resolve_device(device, source=f"--device {device}")
        if device is not None
        else resolve_device(cfg.run.device, source=source)
    )
    agent, obs_space, act_space, _ = restored(cfg, weights, target, render=video is not None, source=source)
    played = None if policy is None else _policy_file(policy, cfg, obs_space, act_space, deterministic=deterministic)
    eval_seed = cfg.run.seed + SEED_OFFSET if seed is None else seed
    settings = {"episodes": episodes, "deterministic": deterministic, "seed": eval_seed, "device": target}
    result = _play(agent, cfg, settings, source=source, video=video, progress=progress)
    policy_result = None if played is None else _play(played, cfg, settings, source=source, progress=progress)
    return EvalReport(
        result,
        weights,
        folder,
        cfg.algo.name,
        cfg.env.id,
        eval_seed,
        deterministic,
        str(target),
        video,
        None if played is None else played.path,
        policy_result,
    )


def _play(
    actor, cfg, settings: dict[str, Any], *, source: str, video: Path | None = None, progress: EpisodeProgress | None
) -> EvalResult:
    """The episodes ``actor`` plays on ``cfg``'s env with ``settings`` (episodes, deterministic, seed, device),
    the first recorded to ``video`` if given, ``progress`` told as they finish."""
    evaluator = make_evaluator(
        actor,
        cfg.env,
        **settings,
        render=video is not None,
        source=source,
        num_envs=cfg.eval.envs(cfg.env.num_envs),
    )
    try:
        if video is None:
            return evaluator(progress=progress)
        return _record(evaluator, video, progress)
    finally:
        evaluator.close()


def _policy_file(path: str | Path, cfg, obs_space, act_space, *, deterministic: bool):
    """The exported ``path`` as an agent, after its metadata was checked against the run's env and its
    spaces ``obs_space`` and ``act_space``."""
    from rlcli.play.policy_file import PolicyFile

    played = PolicyFile(path)
    played.check_run(cfg.env.id, describe_space(obs_space), describe_space(act_space))
    if played.stochastic == deterministic:
        raise InputError(
            f"--policy {path}",
            "the file samples its actions (rlcli export --stochastic): play it with --stochastic, beside the run's "
            "sampled policy"
            if played.stochastic
            else "the file holds the deterministic policy: drop --stochastic, or export the file with --stochastic",
        )
    return played


class Restored(NamedTuple):
    """A run's agent loaded from a checkpoint, in eval mode, with its env's spaces and the checkpoint."""

    agent: nn.Module
    observation_space: Any
    action_space: Any
    payload: dict[str, Any]


def restored_agent(cfg, weights: Path, device: torch.device, *, render: bool, source: str) -> nn.Module:
    """:func:`restored`'s agent."""
    return restored(cfg, weights, device, render=render, source=source).agent


def restored(cfg, weights: Path, device: torch.device, *, render: bool, source: str) -> Restored:
    """The agent of ``cfg`` built as ``build_run`` builds it and loaded from the checkpoint ``weights``,
    in eval mode, after the checkpoint's algorithm, env and spaces were checked against ``cfg``.

    With ``render``, an env without rgb_array frames is refused before anything is built.
    """
    what = f"checkpoint {weights}"
    payload = checkpoint.read(weights)
    agent, obs_space, act_space = built_agent(cfg, device, render=render, source=source)
    checkpoint.check_origin(
        payload,
        algo=cfg.algo.name,
        env=cfg.env.id,
        what=what,
        spaces={"observation": describe_space(obs_space), "action": describe_space(act_space)},
    )
    checkpoint.restore_agent(agent, payload["agent"], what=what)
    return Restored(agent.eval(), obs_space, act_space, payload)


def built_agent(cfg, device: torch.device, *, source: str, render: bool = False):
    """(``cfg``'s agent as ``build_run`` builds it, untrained, the env's observation space, its action space),
    the spaces checked against the algorithm and the encoder; with ``render``, an env without rgb_array
    frames is refused before anything is built."""
    layout = None
    if team_kind(cfg.env.id) is not None:
        # A team's spaces are its groups' (the first group's stand for the run's, as training records them).
        envs = make_team_envs(cfg.env, 1, seed=cfg.run.seed, device=device, source=source, state=False)
        layout = envs.layout
        envs.close()
        obs_space, act_space = layout.groups[0].observation_space, layout.groups[0].action_space
    else:
        probe = make_env(cfg.env, render=render, source=source)
        obs_space, act_space = probe.observation_space, probe.action_space
        probe.close()
        check_run_spaces(cfg, obs_space, act_space, source)
    ctx = BuildContext(
        obs_space,
        act_space,
        network=cfg.network,
        env=cfg.env,
        collector=cfg.collector,
        optim=cfg.optim,
        device=device,
        seed=cfg.run.seed,
        source=source,
        team=layout,
    )
    # As build_run does: initial weights from a forked RNG, so torch's global generator is untouched.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.run.seed)
        agent = ALGORITHMS[cfg.algo.name].build_agent(cfg.algo, ctx)
    return agent, obs_space, act_space


def _check_video(video: Path) -> None:
    """Raise an InputError unless an mp4 can be written at ``video``: extra installed, folder present."""
    try:
        import imageio  # noqa: F401
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        raise InputError("--video needs the video extra", VIDEO_EXTRA) from None
    check_output_file(video, flag="--video", suffix=".mp4")


def _record(evaluator: Evaluator | TeamEvaluator, video: Path, progress: EpisodeProgress | None) -> EvalResult:
    """Run ``evaluator`` with its first episode written to ``video`` (H.264 mp4), atomically."""
    import imageio.v2 as imageio

    fps = evaluator.metadata.get("render_fps") or 30
    # ffmpeg writes to a path and picks the container by its suffix, which the temporary keeps.
    with replacing(video) as temporary:
        # macro_block_size 2: libx264's yuv420p needs even sizes; the default 16 would resize
        # most frames (CartPole's 600 x 400) with a warning.
        writer = imageio.get_writer(temporary, format="FFMPEG", mode="I", fps=fps, codec="libx264", macro_block_size=2)
        try:
            result = evaluator(frames_sink=writer.append_data, progress=progress)
        finally:
            writer.close()
    return result
