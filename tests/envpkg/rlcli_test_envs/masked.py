"""Envs with action masks, registered when ``rlcli_test_envs`` is imported:

- ``RlcliTest/MaskedPicks-v0``: a ``Dict`` observation carrying ``action_mask`` (the PettingZoo and
  Gymnasium convention) and a ``MultiDiscrete`` action, masked per sub-action (the flat convention);
- ``RlcliTest/MaskedRecall-v0``: a memory task with masks, for recurrent policies;
- ``RlcliTest/CountedTaxi-v0``: gymnasium's Taxi (its masks in ``info``) counting the actions its
  mask forbade, for the bar "a masked policy takes no invalid action";
- ``RlcliTest/TaxiMask-v0``: Taxi whose mask has the size and dtype its kwargs say (bad input);
- ``RlcliTest/TaxiMaskEmptiesOnRank-v0``: Taxi whose mask allows nothing from a given step on, in one
  rank of a ``--nproc`` run only;
- ``RlcliTest/Bits-v0``: a ``MultiBinary`` action, without masks.

The first three count the forbidden actions they are given in its ``invalid_actions`` attribute (over its
lifetimes) and in ``info["invalid_actions"]`` (this episode's so far).
"""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.toy_text.taxi import TaxiEnv


class MaskedPicks(gym.Env):
    """Pick the shown target with a ``MultiDiscrete(nvec)`` action, under a mask per sub-action.

    Each step shows a target value for every sub-action (one-hot, concatenated: ``target``) and a
    mask (``action_mask``, int8, the flat concatenation of one mask per sub-action) that forbids one
    random value of each sub-action other than its target. Reward per step: 1 / k for each
    sub-action equal to its target, -1 for each forbidden value taken. ``length`` steps an episode:
    a perfect policy scores ``length`` (8), a uniform one about ``length / mean(nvec)`` less the
    penalties.
    """

    def __init__(self, nvec=(3, 4), length: int = 8):
        self.nvec = np.asarray(nvec, dtype=np.int64)
        self.length = length
        size = int(self.nvec.sum())
        self.observation_space = spaces.Dict(
            {
                "target": spaces.Box(0.0, 1.0, (size,), np.float32),
                "action_mask": spaces.Box(0, 1, (size,), np.int8),
            }
        )
        self.action_space = spaces.MultiDiscrete(self.nvec)
        self.invalid_actions = 0
        self.offsets = np.concatenate([[0], np.cumsum(self.nvec)[:-1]])

    def _draw(self):
        self.target = np.array([self.np_random.integers(n) for n in self.nvec])
        target = np.zeros(int(self.nvec.sum()), dtype=np.float32)
        target[self.offsets + self.target] = 1.0
        self.mask = np.ones(int(self.nvec.sum()), dtype=np.int8)
        for i, n in enumerate(self.nvec):
            others = [v for v in range(n) if v != self.target[i]]
            self.mask[self.offsets[i] + others[self.np_random.integers(len(others))]] = 0
        return {"target": target, "action_mask": self.mask.copy()}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.episode_invalid = 0, 0
        return self._draw(), {"invalid_actions": 0}

    def step(self, action):
        action = np.asarray(action, dtype=np.int64)
        forbidden = int((self.mask[self.offsets + action] == 0).sum())
        self.invalid_actions += forbidden
        self.episode_invalid += forbidden
        reward = float((action == self.target).mean()) - forbidden
        self.t += 1
        obs = self._draw()
        return obs, reward, self.t >= self.length, False, {"invalid_actions": self.episode_invalid}


gym.register(id="RlcliTest/MaskedPicks-v0", entry_point=MaskedPicks, max_episode_steps=50)


class MaskedRecall(gym.Env):
    """Recall a cue after a delay, under masks: a memory task that a memoryless policy solves only by chance.

    Step 0 shows one of ``cues`` cues (one-hot in the first ``cues`` entries of a Box observation);
    then ``delay`` blank steps; then the last entry of the observation asks for the answer. Actions:
    0 waits, 1 + c answers cue c. The mask (``info["action_mask"]``, int8) allows only waiting until
    the answer step, and there only the cue's answer and one other drawn at random: a policy that
    remembers the cue scores 1 an episode (the solved score), one that does not picks between two
    allowed answers it cannot tell apart and scores 0.5 on average, whatever its preferences.
    Reward: 1 for the right answer, 0 otherwise; episodes last ``delay + 2`` steps.
    """

    def __init__(self, cues: int = 3, delay: int = 4):
        self.cues, self.delay = cues, delay
        self.observation_space = spaces.Box(0.0, 1.0, (cues + 1,), np.float32)
        self.action_space = spaces.Discrete(cues + 1)
        self.invalid_actions = 0

    def _state(self):
        obs = np.zeros(self.cues + 1, dtype=np.float32)
        mask = np.zeros(self.cues + 1, dtype=np.int8)
        if self.t == 0:
            obs[self.cue] = 1.0
        if self.t == self.delay + 1:
            obs[-1] = 1.0
            mask[1 + self.cue] = mask[1 + self.other] = 1
        else:
            mask[0] = 1
        self.mask = mask
        return obs, {"action_mask": mask.copy(), "invalid_actions": self.episode_invalid}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.episode_invalid = 0, 0
        self.cue = int(self.np_random.integers(self.cues))
        self.other = int((self.cue + 1 + self.np_random.integers(self.cues - 1)) % self.cues)
        return self._state()

    def step(self, action):
        action = int(action)
        if self.mask[action] == 0:
            self.invalid_actions += 1
            self.episode_invalid += 1
        answering = self.t == self.delay + 1
        reward = float(answering and action == 1 + self.cue)
        self.t += 1
        # After the answer, the final observation is blank and allows waiting only.
        obs, info = self._state()
        return obs, reward, answering, False, info


gym.register(id="RlcliTest/MaskedRecall-v0", entry_point=MaskedRecall, max_episode_steps=100)


class CountInvalid(gym.Wrapper):
    """An env whose ``info["action_mask"]`` says which actions are allowed, counting those taken that it
    forbade: ``invalid_actions`` over the env's life, ``info["invalid_actions"]`` this episode."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.invalid_actions = 0
        self.episode_invalid = 0
        self.mask = None

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.mask, self.episode_invalid = info["action_mask"], 0
        return obs, {**info, "invalid_actions": 0}

    def step(self, action):
        if not self.mask[int(action)]:
            self.invalid_actions += 1
            self.episode_invalid += 1
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.mask = info["action_mask"]
        return obs, reward, terminated, truncated, {**info, "invalid_actions": self.episode_invalid}


def counted_taxi(**kwargs) -> gym.Env:
    """gymnasium's Taxi counting the actions its mask forbade."""
    return CountInvalid(TaxiEnv(**kwargs))


gym.register(id="RlcliTest/CountedTaxi-v0", entry_point=counted_taxi, max_episode_steps=200, reward_threshold=8)


def taxi_with_mask(size: int = 6, dtype: str = "int8") -> gym.Env:
    """gymnasium's Taxi whose ``info["action_mask"]`` is made ``size`` entries of ``dtype``: a mask that
    does not fit the actions, for the config checks."""
    return ReshapedMask(TaxiEnv(), size, np.dtype(dtype))


class ReshapedMask(gym.Wrapper):
    def __init__(self, env: gym.Env, size: int, dtype: np.dtype):
        super().__init__(env)
        self.size, self.dtype = size, dtype

    def _mask(self, info: dict) -> dict:
        mask = np.resize(np.asarray(info["action_mask"]), self.size).astype(self.dtype)
        return {**info, "action_mask": mask}

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return obs, self._mask(info)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, self._mask(info)


gym.register(id="RlcliTest/TaxiMask-v0", entry_point=taxi_with_mask, max_episode_steps=200)


class MaskEmptiesOnRank(gym.Wrapper):
    """gymnasium's Taxi whose ``info["action_mask"]`` allows no action at all once the env has taken
    ``at`` steps (over its lifetime, resets included), in the process of rank ``rank`` only (torchrun's
    ``RANK``; 0 outside torchrun): one rank's env fails while the other ranks go on."""

    def __init__(self, env: gym.Env, rank: int, at: int):
        super().__init__(env)
        self.empties = int(os.environ.get("RANK", "0")) == rank
        self.at, self.steps = at, 0

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if self.empties and self.steps >= self.at:
            info = {**info, "action_mask": np.zeros_like(info["action_mask"])}
        return obs, reward, terminated, truncated, info


def taxi_mask_empties_on_rank(rank: int = 1, at: int = 100) -> gym.Env:
    """gymnasium's Taxi whose mask allows nothing from its ``at``-th step on, on rank ``rank`` alone."""
    return MaskEmptiesOnRank(TaxiEnv(), rank, at)


gym.register(id="RlcliTest/TaxiMaskEmptiesOnRank-v0", entry_point=taxi_mask_empties_on_rank, max_episode_steps=200)


class Bits(gym.Env):
    """Copy ``k`` shown bits with a ``MultiBinary(k)`` action: reward the fraction copied, 8 steps an
    episode (a perfect policy scores 8, a uniform one 4)."""

    def __init__(self, k: int = 3):
        self.k = k
        self.observation_space = spaces.Box(0.0, 1.0, (k,), np.float32)
        self.action_space = spaces.MultiBinary(k)

    def _draw(self):
        self.bits = self.np_random.integers(2, size=self.k)
        return self.bits.astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._draw(), {}

    def step(self, action):
        reward = float((np.asarray(action) == self.bits).mean())
        self.t += 1
        return self._draw(), reward, self.t >= 8, False, {}


gym.register(id="RlcliTest/Bits-v0", entry_point=Bits, max_episode_steps=50)
