"""A tiny env package for ``--env-package`` tests: importing it registers ``RlcliTest/Corridor-v0``
(no rendering) and ``RlcliTest/PaintedCorridor-v0`` (``rgb_array`` frames, for ``eval --video``).

Put ``tests/envpkg`` on ``PYTHONPATH`` and pass ``--env-package rlcli_test_envs``.
"""

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Corridor(gym.Env):
    """Walk right along a corridor of ``length`` cells; reward 1 at the far end, 0 elsewhere.

    Observation: the position as a fraction of the length (a 1-D Box); actions: 0 left, 1 right.
    ``explode_seed``: reset with this seed raises, to make one seed of a multi-seed run fail.
    """

    def __init__(self, length: int = 5, explode_seed: int | None = None):
        self.length = length
        self.explode_seed = explode_seed
        self.observation_space = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.position = 0

    def _obs(self) -> np.ndarray:
        return np.array([self.position / self.length], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        if seed is not None and seed == self.explode_seed:
            raise RuntimeError(f"exploded on purpose at reset(seed={seed})")
        super().reset(seed=seed)
        self.position = 0
        return self._obs(), {}

    def step(self, action):
        self.position = max(0, self.position + (1 if int(action) == 1 else -1))
        done = self.position >= self.length
        return self._obs(), float(done), done, False, {}


gym.register(id="RlcliTest/Corridor-v0", entry_point=Corridor, max_episode_steps=50)


class PaintedCorridor(Corridor):
    """The corridor with ``rgb_array`` rendering drawn in numpy (no pygame): a 32 x 32 cell per
    position, the walker's cell white, the goal green."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, length: int = 5, render_mode: str | None = None):
        super().__init__(length)
        self.render_mode = render_mode

    def render(self) -> np.ndarray:
        frame = np.zeros((32, 32 * (self.length + 1), 3), dtype=np.uint8)
        frame[:, 32 * self.length :, 1] = 160
        frame[4:28, 32 * self.position + 4 : 32 * self.position + 28] = 255
        return frame


gym.register(id="RlcliTest/PaintedCorridor-v0", entry_point=PaintedCorridor, max_episode_steps=50)


class DictCorridor(Corridor):
    """The corridor seen two ways at once, for ``Dict`` observations: ``image``, a 3 x 16 x 16 uint8
    picture with the walker's column lit, and ``position``, the 1-D Box of :class:`Corridor`.
    ``continuous``: one Box action in [-1, 1], a step right when above 0, left otherwise."""

    def __init__(self, length: int = 5, continuous: bool = False):
        super().__init__(length)
        self.observation_space = spaces.Dict(
            {
                "image": spaces.Box(0, 255, (3, 16, 16), np.uint8),
                "position": spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32),
            }
        )
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32) if continuous else spaces.Discrete(2)
        self.continuous = continuous

    def _obs(self):
        image = np.zeros((3, 16, 16), dtype=np.uint8)
        column = self.position * 15 // self.length
        image[:, :, column] = 255
        return {"image": image, "position": super()._obs()}

    def step(self, action):
        if self.continuous:
            action = 1 if float(np.asarray(action).reshape(-1)[0]) > 0 else 0
        return super().step(action)


gym.register(id="RlcliTest/DictCorridor-v0", entry_point=DictCorridor, max_episode_steps=50)
gym.register(
    id="RlcliTest/DictCorridorContinuous-v0",
    entry_point=DictCorridor,
    max_episode_steps=50,
    kwargs={"continuous": True},
)

# Envs with action masks (Dict observations with a mask, MultiDiscrete actions, a memory task, Taxi
# counting forbidden actions): registered by importing their module.
from rlcli_test_envs import masked as masked  # noqa: E402

# A team env (agents that leave and join, per-agent masks) in PettingZoo's registry, where PettingZoo is.
try:
    import pettingzoo  # noqa: F401
except ImportError:
    pass
else:
    from rlcli_test_envs import teams as teams  # noqa: E402
