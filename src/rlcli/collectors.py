"""On-policy rollouts: ``[T, N]`` TensorDicts written in place, step by step."""

from __future__ import annotations

import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv
from tensordict import TensorDict

from rlcli import keys
from rlcli.config.errors import single
from rlcli.devices import HostToDevice
from rlcli.envs import autoreset_mode
from rlcli.models.actor_critic import ActorCritic
from rlcli.normalization import RewardScaler
from rlcli.timing import Timer


class RolloutCollector:
    """Steps ``envs`` with ``agent`` for ``steps`` steps per call and returns one batch.

    The policy runs on ``device``, the envs on the CPU. The returned TensorDict
    (batch ``[steps, num_envs]``, keys in :mod:`rlcli.keys`) is reused by the
    next call: consume it before collecting again.
    """

    def __init__(
        self,
        envs: VectorEnv,
        agent: ActorCritic,
        *,
        steps: int,
        device: torch.device,
        reward_scaler: RewardScaler,
        seed: int,
    ):
        self.envs = envs
        self.agent = agent
        self.reward_scaler = reward_scaler
        self.mode = autoreset_mode(envs)
        if self.mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise single(None, f"autoreset mode {self.mode} is not supported; "
                         "supported: NEXT_STEP, SAME_STEP", path="env.vectorization")
        n = envs.num_envs
        obs_shape = envs.single_observation_space.shape
        act_space = envs.single_action_space
        discrete = act_space.shape == () and np.issubdtype(act_space.dtype, np.integer)
        self.batch = TensorDict(
            {
                keys.OBSERVATION: torch.zeros(steps, n, *obs_shape),
                keys.ACTION: torch.zeros(steps, n, *act_space.shape,
                                         dtype=torch.int64 if discrete else torch.float32),
                keys.LOG_PROB: torch.zeros(steps, n),
                keys.VALUE: torch.zeros(steps, n),
                keys.NEXT_VALUE: torch.zeros(steps, n),
                keys.REWARD: torch.zeros(steps, n),
                keys.TERMINATED: torch.zeros(steps, n, dtype=torch.bool),
                keys.TRUNCATED: torch.zeros(steps, n, dtype=torch.bool),
                keys.VALID: torch.ones(steps, n, dtype=torch.bool),
            },
            batch_size=[steps, n],
            device=device,
        )
        # Env outputs stay in host arrays during the rollout and move once at its end.
        self.reward = np.zeros((steps, n), dtype=np.float32)
        self.terminated = np.zeros((steps, n), dtype=bool)
        self.truncated = np.zeros((steps, n), dtype=bool)
        self.valid = np.ones((steps, n), dtype=bool)
        self.to_device = HostToDevice((n, *obs_shape), torch.float32, device)
        self.steps = steps
        # Actions are sampled from the collector's own generator, never torch's global one.
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)
        try:
            self.obs, _ = envs.reset(seed=seed)
        # Like make_envs: whatever the env raises at its first reset is bad input here.
        except Exception as exc:  # noqa: BLE001
            raise single(None, f"cannot reset the env: {type(exc).__name__}: {exc}", path="env") from None
        # NEXT_STEP envs spend the step after an episode end on the reset:
        # that step carries no transition.
        self.resetting = np.zeros(n, dtype=bool)
        self.frames = 0

    def collect(self, timer: Timer) -> TensorDict:
        """Run one rollout; returns the batch with every key of :mod:`rlcli.keys` but the advantages."""
        agent, batch = self.agent, self.batch
        obs_buf, act_buf = batch[keys.OBSERVATION], batch[keys.ACTION]
        logp_buf, value_buf = batch[keys.LOG_PROB], batch[keys.VALUE]
        next_value = batch[keys.NEXT_VALUE]
        final_values: list[tuple[int, np.ndarray, torch.Tensor]] = []
        same_step = self.mode is AutoresetMode.SAME_STEP
        for t in range(self.steps):
            # The observation of a NEXT_STEP reset step was already seen as a final one.
            fresh = ~self.resetting
            with timer.phase("collect.policy"):
                update = True if fresh.all() else torch.from_numpy(fresh).to(self.batch.device)
                obs = agent.obs_norm(self.to_device(self.obs), update=update)
                action, log_prob, value = agent.act(obs, self.generator)
                obs_buf[t] = obs
                act_buf[t] = action
                logp_buf[t] = log_prob
                value_buf[t] = value
                env_action = agent.policy.to_env(action.cpu())
            with timer.phase("collect.env_step"):
                self.obs, reward, terminated, truncated, info = self.envs.step(env_action)
            done = terminated | truncated
            self.reward[t] = self.reward_scaler(torch.from_numpy(reward.astype(np.float32)),
                                                torch.from_numpy(done), torch.from_numpy(fresh)).numpy()
            self.terminated[t] = terminated
            self.truncated[t] = truncated
            if same_step:
                if truncated.any():
                    final_values.append((t, truncated.copy(), self._final_value(info, truncated)))
            else:
                self.valid[t] = fresh
                self.resetting = done
        self.frames += self.steps * self.envs.num_envs
        with torch.no_grad():
            last = agent.value(agent.obs_norm(self.to_device(self.obs)))
        next_value[:-1] = value_buf[1:]
        next_value[-1] = last
        for t, mask, values in final_values:
            next_value[t, torch.from_numpy(mask).to(next_value.device)] = values
        batch[keys.REWARD].copy_(torch.from_numpy(self.reward))
        batch[keys.TERMINATED].copy_(torch.from_numpy(self.terminated))
        batch[keys.TRUNCATED].copy_(torch.from_numpy(self.truncated))
        batch[keys.VALID].copy_(torch.from_numpy(self.valid))
        return batch

    @torch.no_grad()
    def _final_value(self, info: dict, truncated: np.ndarray) -> torch.Tensor:
        """V of the final observations of truncated episodes (SAME_STEP envs report them in ``info``)."""
        final = np.stack(info["final_obs"][truncated]).astype(np.float32)
        obs = torch.from_numpy(final).to(self.batch.device)
        return self.agent.value(self.agent.obs_norm(obs))
