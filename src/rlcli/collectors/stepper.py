"""Transitions of vector envs: ``[T, N]`` TensorDicts written in place, step by step."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from rlcli import keys, observations
from rlcli.carry import Carry
from rlcli.collectors import envstate
from rlcli.collectors import mask_recorder as masking
from rlcli.config.errors import single
from rlcli.envs import LIFE_LOST, autoreset_mode
from rlcli.timing import Timer

if TYPE_CHECKING:
    from tensordict import NestedKey, TensorDict

    from rlcli.algos import Collects
    from rlcli.runtime.distributed import Group
    from rlcli.sources import Episodes


def first_reset(envs: VectorEnv, seed: int) -> tuple:
    """``envs.reset(seed=seed)``: the observations and info of a collector's first reset.

    Raises:
        ConfigError: whatever the env raises there (like make_envs: bad input here).
    """
    try:
        return envs.reset(seed=seed)
    except Exception as exc:  # noqa: BLE001
        raise single(None, f"cannot reset the env: {type(exc).__name__}: {exc}", path="env") from None


def host_buffers(
    obs_space: spaces.Space, act_space: spaces.Space, steps: int, n: int, action_mask: str | None, *, pin: bool
) -> TensorDict:
    """The host tensors of a rollout of ``steps`` x ``n`` env steps (pinned with ``pin``): observations in
    the space's own dtype, rewards, flags, and the masks' buffers where the envs give masks."""
    from tensordict import TensorDict

    host = TensorDict(
        {
            keys.OBSERVATION: observations.host_buffer(obs_space, (steps, n)),
            keys.NEXT_OBSERVATION: observations.host_buffer(obs_space, (steps, n)),
            keys.REWARD: torch.zeros(steps, n),
            keys.TERMINATED: torch.zeros(steps, n, dtype=torch.bool),
            keys.TRUNCATED: torch.zeros(steps, n, dtype=torch.bool),
            keys.VALID: torch.ones(steps, n, dtype=torch.bool),
            **masking.buffers(action_mask, act_space, steps, n),
        },
        batch_size=[steps, n],
        device=torch.device("cpu"),
    )
    return host.pin_memory() if pin else host


class Collector:
    """Steps ``envs`` with ``algo.act`` for ``steps`` steps per call and returns one raw batch: the
    data source of an online run (:class:`rlcli.sources.Source`).

    The batch (``[steps, num_envs]``, on ``device``) holds ``observation``,
    ``next_observation``, ``action``, ``reward``, ``terminated``, ``truncated``,
    ``valid`` and every key the algorithm's ``act`` returns beside ``action``. Env data is
    stored raw: normalization and scaling belong to whoever learns from it.
    The batch is reused by the next call: consume it before collecting again.

    Env outputs are written into host tensors (pinned on CUDA) and moved to the
    device once per rollout; on the CPU the host tensors are the batch itself.
    Observations keep the space's own dtype (uint8 frames stay uint8; a Dict observation is a
    nested TensorDict): they become float inside the algorithm's encoder, on the device.
    """

    def __init__(
        self,
        envs: VectorEnv,
        algo: Collects,
        *,
        steps: int,
        device: torch.device,
        seed: int,
        group: Group | None = None,
        env_id: str | None = None,
        action_mask: str | None = None,
    ):
        self.envs = envs
        self.algo = algo
        self.seed = seed
        # Frames count the whole run's: every rank of a data-parallel run steps as many as this one.
        self.world_size = world_size = 1 if group is None else group.world_size
        self.mode = autoreset_mode(envs)
        if self.mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise single(
                None,
                f"autoreset mode {self.mode} is not supported; supported: NEXT_STEP, SAME_STEP",
                path="env.vectorization",
            )
        n = envs.num_envs
        obs_space = envs.single_observation_space
        act_space = envs.single_action_space
        self.bounds = (
            (act_space.low.astype(np.float32), act_space.high.astype(np.float32))
            if isinstance(act_space, spaces.Box)
            else None
        )
        self.device = device
        pin = device.type == "cuda"
        self.host = host_buffers(obs_space, act_space, steps, n, action_mask, pin=pin)
        # numpy views of the host tensors: the env's arrays are copied straight in. An observation's is a
        # dict of them for a Dict space; every other key holds one tensor, viewed as one array.
        observed = (keys.OBSERVATION, keys.NEXT_OBSERVATION)
        self.observed = {key: observations.numpy_view(self.host.get(key)) for key in observed}
        self.arrays = {
            key: value.numpy()
            for key, value in self.host.items()
            if key not in observed and isinstance(value, torch.Tensor)
        }
        # Where the envs' action masks come from ("info", "observation"; rlcli.envs.masks), or None.
        # A mask error names the rank where there are several, and the env's id.
        rank = group.rank if group is not None and world_size > 1 else None
        env_id = env_id or (envs.spec.id if envs.spec is not None else "")
        self.masks = masking.recorder(
            action_mask, self.arrays, device, per_step=n * world_size, steps=steps, env_id=env_id, rank=rank
        )
        # The keys of the algorithm's act are allocated at the first step, from what it returns.
        self.batch = self.host if not pin else self.host.to(device)
        self.to_device = observations.ToDevice(obs_space, n, device)
        self.steps = steps
        # Actions are sampled from the collector's own generator, never torch's global one.
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)
        self.obs, info = first_reset(envs, seed)
        # NEXT_STEP envs spend the step after an episode end on the reset:
        # that step carries no transition.
        self.resetting = np.zeros(n, dtype=bool)
        # The policy's memory and the envs' masks between steps (rlcli.carry).
        self.carry = Carry.of(algo.agent, n, device)
        self.progress = 0
        if self.masks is not None:
            self.masks.start(info, self.carry, self.progress)
        self.act_buffers: dict[NestedKey, torch.Tensor] | None = None

    unit = "frames"

    @property
    def action_mask(self) -> str | None:
        """Where the envs' action masks come from ("info" or "observation"), or None without masks."""
        return None if self.masks is None else self.masks.where

    @property
    def per_iteration(self) -> int:
        """Env steps of one :meth:`next_batch` on this rank."""
        return self.steps * self.envs.num_envs

    @property
    def observation_space(self) -> spaces.Space:
        return self.envs.single_observation_space

    @property
    def action_space(self) -> spaces.Space:
        return self.envs.single_action_space

    @property
    def episode_stats(self) -> Episodes:
        """The finished episodes' counts, returns and lengths: the envs' ``RecordEpisodeStatistics``
        keeps them."""
        # make_envs wraps a run's envs in it, outermost.
        assert isinstance(self.envs, RecordEpisodeStatistics)
        return self.envs

    def close(self) -> None:
        self.envs.close()

    def _allocate(self, out: TensorDict) -> dict[NestedKey, torch.Tensor]:
        """Batch buffers for the keys the algorithm's act returns, shaped by its first output."""
        for key, value in out.items():
            self.batch.set(key, torch.zeros(self.steps, *value.shape, dtype=value.dtype, device=self.device))
        return {key: self.batch.get(key) for key in out.keys()}

    def next_batch(self, timer: Timer) -> TensorDict:
        """Run one rollout of ``steps`` env steps; returns the batch."""
        arrays = self.arrays
        obs_buf, next_buf = self.observed[keys.OBSERVATION], self.observed[keys.NEXT_OBSERVATION]
        reward_buf, valid_buf = arrays[keys.REWARD], arrays[keys.VALID]
        term_buf, trunc_buf = arrays[keys.TERMINATED], arrays[keys.TRUNCATED]
        same_step = self.mode is AutoresetMode.SAME_STEP
        for t in range(self.steps):
            with timer.phase("collect.policy"):
                out = self.algo.act(self.to_device(self.obs), self.generator, self.carry)
                if self.act_buffers is None:
                    self.act_buffers = self._allocate(out)
                for key, buffer in self.act_buffers.items():
                    buffer[t] = out.get(key)
                env_action = out.get(keys.ACTION).cpu().numpy()
                if self.bounds is not None:
                    env_action = np.clip(env_action, *self.bounds)
            observations.write(obs_buf, t, self.obs)
            if self.masks is not None:
                self.masks.acted(t, self.carry)
            with timer.phase("collect.env_step"):
                self.obs, reward, terminated, truncated, info = self.envs.step(env_action)
            observations.write(next_buf, t, self.obs)
            reward_buf[t] = reward
            # A lost life ends the trace the algorithm learns from, not the game (envs.AtariLives).
            life_lost = info.get(LIFE_LOST)
            term_buf[t] = terminated if life_lost is None else terminated | life_lost
            trunc_buf[t] = truncated
            done = terminated | truncated
            if self.masks is not None:
                self.masks.stepped(t, info, done, same_step, self.carry, self.progress)
            if same_step:
                # The env has already reset: the observation returned is the next
                # episode's first, and the true final one is in info.
                if done.any():
                    rows = np.flatnonzero(done)
                    observations.write(next_buf, (t, rows), observations.stack(list(info["final_obs"][rows])))
            else:
                # The observation of a NEXT_STEP reset step was already seen as a final one.
                valid_buf[t] = ~self.resetting
                self.resetting = done
            if self.carry.first is not None:
                # A memory resets where the next observation starts an episode or follows a lost life (a
                # NEXT_STEP reset step, acting on a final observation, is reset too: it is never learned from).
                self.carry.episode_starts(term_buf[t] | trunc_buf[t] | ~valid_buf[t])
        self.progress += self.steps * self.envs.num_envs * self.world_size
        if self.batch is not self.host:
            for key, value in self.host.items():
                self.batch.get(key).copy_(value, non_blocking=True)
        return self.batch

    def row_terms(self) -> dict[str, float]:
        """None: one agent's episodes are the base columns'."""
        return {}

    def state_dict(self) -> dict:
        """What continuing the rollout needs: the frame count, the action generator, the
        observation the next step acts on, and the envs' own state (:mod:`rlcli.collectors.envstate`)."""
        return {
            "frames": self.progress,
            "generator": self.generator.get_state(),
            "obs": observations.to_saved(self.obs),
            "resetting": torch.from_numpy(self.resetting.copy()),
            "carry": self.carry.state_dict(),
            "envs": envstate.capture(self.envs),
        }

    def load_state_dict(self, state: dict) -> bool:
        """Continue from :meth:`state_dict`; returns whether the envs resumed exactly.

        Envs whose state could not be captured (subprocesses, native simulators) are reset
        instead, seeded from the run's seed and the frame count so that a resumed run is
        still reproducible; their episodes in progress are dropped.

        Raises:
            EnvStateError: the saved envs do not fit the envs built now.
        """
        self.progress = state["frames"]
        self.generator.set_state(state["generator"])
        envstate.restore(self.envs, state["envs"])
        if state["envs"]["exact"]:
            self.obs = observations.from_saved(state["obs"])
            self.resetting = state["resetting"].numpy().copy()
            # Checkpoints from before memory and masks carried nothing: a fresh carry is theirs.
            if "carry" in state:
                self.carry.load_state_dict(state["carry"])
            if self.masks is not None:
                self.masks.resumed(self.carry)
            return True
        self.obs, info = self.envs.reset(seed=self.seed + self.progress)
        self.resetting = np.zeros(self.envs.num_envs, dtype=bool)
        self.carry = Carry.of(self.algo.agent, self.envs.num_envs, self.device)
        if self.masks is not None:
            self.masks.start(info, self.carry, self.progress)
        return False
