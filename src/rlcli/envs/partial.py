"""Partially observable versions of gymnasium's control tasks, registered under RL-Zoo's ids: the
velocity entries of each observation read 0, so that a policy must infer them from the observations
it has seen (a memory), as RL-Zoo's ``MaskVelocityWrapper`` defines the tasks for its recurrent PPO
benchmark (``hyperparams/ppo_lstm.yml``). A fixed table of this module, registered when rlcli's env
package is imported: a config names one of these ids, never code."""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np


@dataclass(frozen=True)
class VelocityMasked:
    """A task whose observation entries ``hidden`` (the velocities) always read 0."""

    base: str
    """The gymnasium id of the fully observed task (its dynamics, rewards and time limit)."""
    hidden: tuple[int, ...]
    """The observation indices zeroed: RL-Zoo's ``velocity_indices`` for the base task."""


VELOCITY_MASKED: dict[str, VelocityMasked] = {
    # Cart velocity and pole angular velocity.
    "CartPoleNoVel-v1": VelocityMasked("CartPole-v1", (1, 3)),
    # Angular velocity (the observation is cos, sin, velocity).
    "PendulumNoVel-v1": VelocityMasked("Pendulum-v1", (2,)),
    # The car's velocity.
    "MountainCarContinuousNoVel-v0": VelocityMasked("MountainCarContinuous-v0", (1,)),
    # Horizontal and vertical velocity, angular velocity. RL-Zoo names LunarLander-v2's; gymnasium 1.x
    # ships v3, with the same observation layout.
    "LunarLanderNoVel-v3": VelocityMasked("LunarLander-v3", (2, 3, 5)),
}
"""Partially observable id -> the task it hides the velocities of."""


class HideVelocity(gym.ObservationWrapper):
    """Observations with the entries ``hidden`` set to 0 (the space keeps its bounds: 0 is inside them)."""

    def __init__(self, env: gym.Env, hidden: tuple[int, ...]):
        super().__init__(env)
        space = env.observation_space
        # The tasks whose velocities are hidden (PARTIAL) observe a Box.
        assert isinstance(space, gym.spaces.Box)
        self.keep = np.ones(space.shape, dtype=space.dtype)
        self.keep[list(hidden)] = 0

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation * self.keep


def velocity_masked(task: str, **kwargs) -> HideVelocity:
    """The env of :data:`VELOCITY_MASKED` id ``task``: its base task made with ``kwargs``, velocities hidden.
    The entry point gymnasium records for those ids (a name, so that their specs can be written down, as
    Minari does with a dataset's env)."""
    entry = VELOCITY_MASKED[task]
    return HideVelocity(gym.make(entry.base, **kwargs), entry.hidden)


def register_partial() -> None:
    """Register every id of :data:`VELOCITY_MASKED` with gymnasium (once per process)."""
    for env_id, task in VELOCITY_MASKED.items():
        if env_id not in gym.registry:
            base = gym.spec(task.base)
            # The base env's time limit is applied inside (gym.make of the base id); none is added outside.
            gym.register(
                id=env_id,
                entry_point=f"{__name__}:velocity_masked",
                kwargs={"task": env_id},
                reward_threshold=base.reward_threshold,
            )


def base_id(env_id: str) -> str:
    """The fully observed task of a :data:`VELOCITY_MASKED` id; any other id as it is."""
    task = VELOCITY_MASKED.get(env_id)
    return env_id if task is None else task.base
