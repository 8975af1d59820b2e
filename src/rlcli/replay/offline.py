"""The replay of an offline run: a loaded dataset is the buffer, sampled as an online buffer is, and
its statistics are computed once over the whole of it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from rlcli import keys
from rlcli.models.normalization import ObservationNormalizer, RewardScaler, clip_rewards
from rlcli.replay.storage import NormalizedSampler, sample_batch

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.datasets import Dataset
    from rlcli.timing import Timer


class DatasetBuffer:
    """Uniform minibatches of a :class:`~rlcli.datasets.Dataset`'s transitions, on ``storage_device``.

    Holds the dataset's tensors (moved there once) and gathers each sample's observation and next
    observation from its rows: no observation is stored twice.
    """

    def __init__(self, dataset: Dataset, *, device: torch.device, storage_device: torch.device):
        self.device, self.storage_device = device, storage_device
        self.observations = dataset.observations.to(storage_device)
        self.rows = dataset.rows.to(storage_device)
        self.actions = dataset.actions.to(storage_device)
        self.terminated = dataset.terminated.to(storage_device)
        self.truncated = dataset.truncated.to(storage_device)
        self.rewards = dataset.rewards.to(storage_device)

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def sample(self, size: int, generator: torch.Generator) -> TensorDict:
        """``size`` transitions drawn uniformly with replacement: ``observation``, ``next_observation``,
        ``action``, ``reward``, ``terminated``, ``truncated`` and ``index``, on the training device."""
        index = torch.randint(len(self), (size,), generator=generator, device=self.storage_device)
        row = self.rows[index]
        return sample_batch(
            {
                keys.OBSERVATION: self.observations[row],
                keys.NEXT_OBSERVATION: self.observations[row + 1],
                keys.ACTION: self.actions[index],
                keys.REWARD: self.rewards[index],
                keys.TERMINATED: self.terminated[index],
                keys.TRUNCATED: self.truncated[index],
            },
            index,
            None,
            self.device,
        )

    def state_dict(self, *, storage: bool = True) -> dict:
        """Nothing: the dataset is read again from its file when a run resumes."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class OfflineReplay:
    """What an off-policy algorithm's learner reads of its replay (:class:`~rlcli.replay.Replay`'s
    interface), for a dataset.

    ``observe`` only counts the gradient steps of the iteration's (empty) batch, and ``due`` pays
    one step for each. The observation and reward statistics are folded in once, over the whole
    dataset, when it is built: the normalizer and scaler then stay as they are for the whole run,
    and are saved with the agent.
    """

    learning = True

    def __init__(
        self,
        dataset: Dataset,
        obs_norm: ObservationNormalizer,
        reward_scaler: RewardScaler,
        *,
        device: torch.device,
        storage_device: torch.device,
        clip_reward: float | None = None,
    ):
        rewards = clip_rewards(dataset.rewards, clip_reward)
        obs_norm.observe(dataset.observations)
        if reward_scaler.enabled:
            # The scaler's statistic, the std of the discounted return, over every episode at once.
            padded, mask = dataset.padded(rewards)
            ended = torch.zeros_like(mask)
            episodes = RewardScaler(dataset.episodes, gamma=reward_scaler.gamma, enabled=True)
            episodes.observe(padded, ended, mask)
            reward_scaler.stats.load_state_dict(episodes.stats.state_dict())
        self.buffer = DatasetBuffer(dataset, device=device, storage_device=storage_device)
        if clip_reward is not None:
            self.buffer.rewards = rewards.to(storage_device)
        self.sample = NormalizedSampler(self.buffer, obs_norm, reward_scaler)
        """``sample(size, generator)``: a minibatch normalized by the dataset's statistics."""
        self.frames = 0

    def observe(self, batch: TensorDict) -> None:
        """Count the iteration's gradient steps (the rows of its empty ``batch``)."""
        self.frames += batch.batch_size.numel()

    def due(self, frames: int) -> int:
        """One gradient step per step of progress."""
        return frames

    def prioritize(self, sample: TensorDict, td_error: torch.Tensor, timer: Timer) -> None:
        """Nothing: a dataset is sampled uniformly."""

    def state_dict(self, *, storage: bool = True) -> dict:
        """The step count; the dataset is not saved (a resumed run reads its file again)."""
        return {"frames": self.frames}

    def load_state_dict(self, state: dict) -> None:
        self.frames = state["frames"]
