"""The replay every off-policy algorithm feeds: folding collected batches into statistics and the
buffer (as n-step windows), sampling normalized minibatches, and the update-to-data schedule."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeAlias

import torch
from gymnasium import spaces

from rlcli import keys, observations
from rlcli.envs import ATARI, env_family
from rlcli.learning.advantages import n_step_returns
from rlcli.models.encoders import is_image
from rlcli.models.normalization import ObservationNormalizer, RewardScaler, clip_rewards
from rlcli.replay.frames import FrameStackBuffer, frame_storage_bytes
from rlcli.replay.offline import OfflineReplay
from rlcli.replay.storage import NormalizedSampler, ReplayBuffer, Spec, check_storage

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.algos.context import BuildContext
    from rlcli.config.fields import ReplayConfig
    from rlcli.timing import Timer


class ReplaySettings(Protocol):
    """The fields of an off-policy algorithm's config that its replay reads (every replay algorithm's has them)."""

    @property
    def replay(self) -> ReplayConfig: ...
    @property
    def gamma(self) -> float: ...
    @property
    def n_step(self) -> int: ...
    @property
    def learning_starts(self) -> int: ...
    @property
    def utd_ratio(self) -> float: ...


def transition_spec(
    observation_space: spaces.Space,
    action: tuple[tuple[int, ...], torch.dtype],
    *,
    n_step: int,
    next_mask: int | None = None,
) -> Spec:
    """What a buffer stores per transition: raw observations in the space's own dtype (one entry
    per key of a Dict), the action, the reward, the end flag, with ``n_step`` > 1 the
    bootstrap discount, and with ``next_mask`` (the mask's size, for a run with action masks) the
    next observation's action mask, which a target's max ranges over."""
    spec: Spec = {
        **observations.spec_entries(keys.OBSERVATION, observation_space),
        **observations.spec_entries(keys.NEXT_OBSERVATION, observation_space),
        keys.ACTION: action,
        keys.REWARD: ((), torch.float32),
        keys.TERMINATED: ((), torch.bool),
    }
    if n_step > 1:
        spec[keys.DISCOUNT] = ((), torch.float32)
    if next_mask is not None:
        spec[keys.NEXT_ACTION_MASK] = ((next_mask,), torch.bool)
    return spec


def build_replay(
    cfg: ReplaySettings, ctx: BuildContext, spec: Spec, obs_norm: ObservationNormalizer
) -> OffPolicyReplay:
    """The :class:`Replay` of an off-policy algorithm config ``cfg``, whose storage is checked first.

    Reads ``cfg.replay``, ``gamma``, ``n_step``, ``learning_starts`` and ``utd_ratio``, and of
    ``ctx`` the env count, reward normalization, device, run folder and ranks. Memmap files go to
    ``replay.directory`` (``rank-R/`` inside it for rank R > 0 of a data-parallel run), else to
    ``replay/`` in the run folder.

    An offline run (``ctx.dataset``) gets an :class:`~rlcli.replay.offline.OfflineReplay` of its dataset
    instead: ``cfg.replay``, ``n_step``, ``learning_starts`` and ``utd_ratio`` do not apply.

    Raises:
        ConfigError: the buffer would not fit in free memory (or disk), or its folder is not writable.
    """
    if ctx.dataset is not None:
        return offline_replay(ctx, obs_norm, gamma=cfg.gamma)
    replay, group, device, run_folder = cfg.replay, ctx.group, ctx.device, ctx.run_folder
    directory = Path(replay.directory).expanduser() if replay.directory else None
    rank = group.rank if group is not None else 0
    if directory is not None and rank > 0:
        # Every rank keeps a buffer of its own: ranks other than 0 in a folder each inside the given one.
        directory = directory / f"rank-{rank}"
        replay = replay.model_copy(update={"directory": str(directory)})
    default_folder = (lambda: run_folder() / "replay") if run_folder is not None else None
    num_envs = ctx.env.num_envs
    buffer: ReplayBuffer | FrameStackBuffer
    if stores_frames(cfg, ctx):
        check_storage(
            replay,
            spec,
            device,
            directory,
            source=ctx.source,
            needed=frame_storage_bytes(replay, spec, num_envs=num_envs),
        )
        buffer = FrameStackBuffer(replay, spec, num_envs=num_envs, device=device, directory=default_folder)
    else:
        check_storage(replay, spec, device, directory, source=ctx.source)
        buffer = ReplayBuffer(replay, spec, device=device, directory=default_folder)
    reward_scaler = RewardScaler(ctx.env.num_envs, gamma=cfg.gamma, enabled=ctx.env.normalize_reward, group=group).to(
        device
    )
    return Replay(
        buffer,
        obs_norm,
        reward_scaler,
        gamma=cfg.gamma,
        n_step=cfg.n_step,
        learning_starts=cfg.learning_starts,
        utd_ratio=cfg.utd_ratio,
        device=device,
        clip_reward=ctx.env.clip_reward,
    )


def box_replay(cfg: ReplaySettings, ctx: BuildContext, obs_norm: ObservationNormalizer) -> OffPolicyReplay:
    """The :func:`build_replay` of an off-policy learner of ``ctx``'s Box actions (float32), with ``cfg``'s n-step
    window, its samples normalized by ``obs_norm``.

    Raises:
        ConfigError: the buffer would not fit in free memory (or disk), or its folder is not writable.
    """
    spec = transition_spec(ctx.observation_space, (tuple(ctx.box_actions.shape), torch.float32), n_step=cfg.n_step)
    return build_replay(cfg, ctx, spec, obs_norm)


def offline_replay(ctx: BuildContext, obs_norm: ObservationNormalizer, *, gamma: float | None) -> OfflineReplay:
    """The :class:`OfflineReplay` of ``ctx.dataset``, its tensors where ``[data] device`` says, and its
    statistics (``[env]`` normalization; the reward scale over returns discounted by ``gamma``, none for
    an algorithm that reads no rewards, ``gamma`` None) over the whole dataset."""
    # Only an offline run calls this, and build_context sets its dataset and the device it is stored on.
    assert ctx.dataset is not None and ctx.dataset_device is not None
    enabled = ctx.env.normalize_reward and gamma is not None
    reward_scaler = RewardScaler(1, gamma=0.0 if gamma is None else gamma, enabled=enabled).to(ctx.device)
    return OfflineReplay(
        ctx.dataset,
        obs_norm,
        reward_scaler,
        device=ctx.device,
        storage_device=ctx.dataset_device,
        clip_reward=ctx.env.clip_reward,
    )


def stores_frames(cfg: ReplaySettings, ctx: BuildContext) -> bool:
    """Whether the replay of ``cfg`` stores each frame once (:mod:`rlcli.replay.frames`): ``replay.frames``
    is auto, the env is ale-py's vector env (NEXT_STEP resets, zeros in a reset stack; EnvPool's pools repeat
    the first frame instead) with a stack of frames, and transitions are 1-step."""
    space = ctx.observation_space
    return (
        cfg.replay.frames == "auto"
        and cfg.n_step == 1
        and env_family(ctx.env.id) is ATARI
        and ctx.env.backend == "gymnasium"
        and ctx.env.vectorization == "vector_entry_point"
        and is_image(space)
        and len(space.shape) >= 3
        and space.shape[0] > 1
        and cfg.replay.capacity // ctx.env.num_envs > space.shape[0]
    )


class Replay:
    """A replay buffer fed from ``[T, N]`` batches, with the statistics that normalize its samples.

    ``observe`` folds a batch into the observation and reward statistics (valid
    steps only) and writes its transitions; ``sample`` draws a minibatch and
    adds ``input`` and ``next_input`` (normalized observations) and a scaled
    ``reward`` (:class:`~rlcli.replay.storage.NormalizedSampler`), so the buffer itself keeps
    raw data. ``due`` counts frames and says how many gradient steps they pay for.
    """

    def __init__(
        self,
        buffer: ReplayBuffer | FrameStackBuffer,
        obs_norm: ObservationNormalizer,
        reward_scaler: RewardScaler,
        *,
        gamma: float,
        n_step: int,
        learning_starts: int,
        utd_ratio: float,
        device: torch.device,
        clip_reward: float | None = None,
    ):
        self.buffer = buffer
        self.obs_norm = obs_norm
        self.reward_scaler = reward_scaler
        self.sample = NormalizedSampler(buffer, obs_norm, reward_scaler)
        """``sample(size, generator)``: a minibatch normalized by the current statistics."""
        self.gamma, self.n_step = gamma, n_step
        self.learning_starts, self.utd_ratio = learning_starts, utd_ratio
        self.device = device
        self.frames = 0
        self.owed = 0.0
        self.carry: TensorDict | None = None
        self.clip_reward = clip_reward

    @property
    def learning(self) -> bool:
        """Whether the warm-up of ``learning_starts`` frames is over."""
        return self.frames >= self.learning_starts

    def observe(self, batch: TensorDict) -> None:
        """Fold a raw batch into the statistics and the buffer, and count its frames.

        With ``clip_reward``, the buffer stores clipped rewards: an n-step sum must add clipped terms.
        """
        valid = batch[keys.VALID]
        if self.clip_reward is not None:
            batch = batch.clone(recurse=False)
            batch[keys.REWARD] = clip_rewards(batch[keys.REWARD], self.clip_reward)
        self.obs_norm.observe(batch[keys.OBSERVATION], valid)
        self.reward_scaler.observe(batch[keys.REWARD], batch[keys.TERMINATED] | batch[keys.TRUNCATED], valid)
        self.buffer.extend(self.transitions(batch))
        self.frames += batch.batch_size.numel()

    def due(self, frames: int) -> int:
        """Gradient steps that ``frames`` new frames pay for: none during the warm-up, then
        ``utd_ratio`` per frame, fractions carried to the next batch."""
        if not self.learning or len(self.buffer) == 0:
            return 0
        self.owed += self.utd_ratio * frames
        # The tolerance keeps 10 x 9.6 owed steps from flooring to 95 by rounding.
        steps = int(self.owed + 1e-6)
        self.owed -= steps
        return steps

    def transitions(self, batch: TensorDict) -> TensorDict:
        """The replay transitions of a raw ``[T, N]`` batch: with ``n_step`` > 1, n-step sums whose
        windows may need the next batch, so each batch emits the windows that start up to
        ``n_step - 1`` steps before its end, and keeps those steps for the next call."""
        n = self.n_step
        if n == 1:
            return batch
        from tensordict import TensorDict

        raw = batch.select(
            keys.OBSERVATION,
            keys.NEXT_OBSERVATION,
            keys.ACTION,
            keys.REWARD,
            keys.TERMINATED,
            keys.TRUNCATED,
            keys.VALID,
            *((keys.NEXT_ACTION_MASK,) if keys.NEXT_ACTION_MASK in batch.keys() else ()),
        )
        if self.carry is None:
            # Placeholder steps before the first batch: never valid, so never emitted.
            self.carry = raw[: n - 1].clone().zero_()
        # TensorDict.cat is what torch.cat dispatches to for tensordicts; called by name it keeps the type.
        joined: TensorDict = TensorDict.cat([self.carry, raw], 0)
        starts = raw.batch_size[0]
        returns, last, discount = n_step_returns(
            joined[keys.REWARD], joined[keys.TERMINATED], joined[keys.TRUNCATED], gamma=self.gamma, n=n, starts=starts
        )
        next_obs = joined[keys.NEXT_OBSERVATION]
        index = last.reshape(*last.shape, *([1] * (next_obs.dim() - 2))).expand(-1, -1, *next_obs.shape[2:])
        out = TensorDict(
            {
                keys.OBSERVATION: joined[keys.OBSERVATION][:starts],
                keys.ACTION: joined[keys.ACTION][:starts],
                keys.REWARD: returns,
                keys.NEXT_OBSERVATION: next_obs.gather(0, index),
                keys.TERMINATED: joined[keys.TERMINATED].gather(0, last),
                keys.DISCOUNT: discount,
                keys.VALID: joined[keys.VALID][:starts],
            },
            batch_size=[starts, raw.batch_size[1]],
        )
        if keys.NEXT_ACTION_MASK in raw.keys():
            # The n-th next state's mask, beside its observation: the target's max ranges over it.
            masks = joined[keys.NEXT_ACTION_MASK]
            out[keys.NEXT_ACTION_MASK] = masks.gather(0, last.unsqueeze(-1).expand(-1, -1, masks.shape[-1]))
        self.carry = joined[starts:].clone()
        return out

    def prioritize(self, sample: TensorDict, td_error: torch.Tensor, timer: Timer) -> None:
        """New priorities from ``td_error`` ([B]) for the transitions of ``sample`` (by its ``index``),
        timed as ``update.priority``; nothing for a uniform buffer."""
        if self.buffer.cfg.prioritized:
            with timer.phase("update.priority"):
                self.buffer.update_priorities(sample[keys.INDEX], td_error)

    def state_dict(self, *, storage: bool = True) -> dict:
        """Counters, the n-step carry, the reward statistics and the buffer (its transitions
        only with ``storage``)."""
        return {
            "frames": self.frames,
            "owed": self.owed,
            "buffer": self.buffer.state_dict(storage=storage),
            "reward_scaler": self.reward_scaler.state_dict(),
            "carry": None if self.carry is None else self.carry.to_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        from tensordict import TensorDict

        self.frames, self.owed = state["frames"], state["owed"]
        self.buffer.load_state_dict(state["buffer"])
        self.reward_scaler.load_state_dict(state["reward_scaler"])
        carry = state["carry"]
        if carry is not None:
            num_envs = self.reward_scaler.returns.shape[0]
            carry = TensorDict(carry, batch_size=[self.n_step - 1, num_envs], device=self.device)
        self.carry = carry


OffPolicyReplay: TypeAlias = Replay | OfflineReplay
"""What an off-policy algorithm learns from: the online :class:`Replay`, or in an offline run the dataset's
:class:`~rlcli.replay.offline.OfflineReplay` (:func:`build_replay` picks)."""
