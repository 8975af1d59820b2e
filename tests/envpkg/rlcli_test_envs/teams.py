"""A PettingZoo parallel team env for the teams tests, registered in PettingZoo's registry as
``RlcliTest/leavers-v0``: agents that leave and join at different steps, with per-agent action masks.

Four agents of one group (``runner``). Each step every live agent sees a target action (one-hot, of 4) and
the episode's time, and earns 1 for playing its target; one other action is forbidden by its mask, and the
env counts every forbidden action played (``Leavers.forbidden``). ``runner_0`` leaves after step 2,
``runner_1`` after step 4, ``runner_2`` after step 6; ``runner_3`` joins at step 3 and leaves after step 6.
The episode ends when every agent has left (6 steps). A perfect team returns 6 (each step's group mean
reward is 1); picking uniformly among the legal actions returns about 2.
"""

from __future__ import annotations

import numpy as np
import pettingzoo
from gymnasium import spaces
from pettingzoo import ParallelEnv

ACTIONS = 4
LEAVES = {"runner_0": 2, "runner_1": 4, "runner_2": 6, "runner_3": 6}
JOINS = {"runner_3": 3}
STEPS = 6


class Leavers(ParallelEnv):
    metadata = {"name": "leavers_v0", "render_modes": []}
    forbidden = 0
    """Forbidden actions played by any instance: what a correct policy never does."""

    def __init__(self):
        self.possible_agents = list(LEAVES)
        self.agents: list[str] = []
        self.rng = np.random.default_rng(0)
        self.t = 0
        self.targets: dict[str, int] = {}
        self.masks: dict[str, np.ndarray] = {}

    def observation_space(self, agent):
        return spaces.Dict(
            {
                "observation": spaces.Box(0.0, 1.0, (ACTIONS + 1,), np.float32),
                "action_mask": spaces.Box(0, 1, (ACTIONS,), np.int8),
            }
        )

    def action_space(self, agent):
        return spaces.Discrete(ACTIONS)

    def _observe(self) -> dict:
        out = {}
        for agent in self.agents:
            target = int(self.rng.integers(ACTIONS))
            banned = int((target + 1 + self.rng.integers(ACTIONS - 1)) % ACTIONS)
            mask = np.ones(ACTIONS, dtype=np.int8)
            mask[banned] = 0
            self.targets[agent], self.masks[agent] = target, mask
            vector = np.zeros(ACTIONS + 1, dtype=np.float32)
            vector[target] = 1.0
            vector[-1] = self.t / STEPS
            out[agent] = {"observation": vector, "action_mask": mask}
        return out

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        self.agents = [a for a in self.possible_agents if JOINS.get(a, 1) <= 1]
        return self._observe(), {agent: {} for agent in self.agents}

    def step(self, actions):
        self.t += 1
        rewards, terminations, truncations = {}, {}, {}
        for agent in self.agents:
            action = int(actions[agent])
            if not self.masks[agent][action]:
                type(self).forbidden += 1
            rewards[agent] = float(action == self.targets[agent])
            terminations[agent] = self.t >= LEAVES[agent]
            truncations[agent] = False
        acted = list(self.agents)
        self.agents = [a for a in acted if not terminations[a]]
        self.agents += [a for a, step in JOINS.items() if step == self.t + 1 and a not in acted]
        observations = self._observe()
        # The agents that left this step see their last observation too (PettingZoo's parallel API).
        for agent in acted:
            if agent not in observations:
                observations[agent] = {
                    "observation": np.zeros(ACTIONS + 1, dtype=np.float32),
                    "action_mask": np.ones(ACTIONS, dtype=np.int8),
                }
        infos = {agent: {} for agent in observations}
        return observations, rewards, terminations, truncations, infos

    def close(self):
        pass


pettingzoo.register("parallel", "RlcliTest/leavers-v0", entry_point=Leavers)


RECALL_STEPS = 4
"""Steps of a recall episode: the cue, two blank steps, the query."""


class Recall(ParallelEnv):
    """``RlcliTest/recall-v0``: a per-agent memory task. Two agents (``scout_0``, ``scout_1``) each see a cue of
    their own (one of two, one-hot) at the episode's first step, then two blank steps, then a query flag; the
    action played at the query earns 1 when it names the agent's cue, and the episode ends. Every other step
    earns 0 whatever is played. A policy with memory returns 1; a memoryless one sees the same query whatever
    the cue and returns 0.5 at best."""

    metadata = {"name": "recall_v0", "render_modes": []}

    def __init__(self):
        self.possible_agents = ["scout_0", "scout_1"]
        self.agents: list[str] = []
        self.rng = np.random.default_rng(0)
        self.t = 0
        self.cues: dict[str, int] = {}

    def observation_space(self, agent):
        return spaces.Box(0.0, 1.0, (3,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(2)

    def _observe(self) -> dict:
        out = {}
        for agent in self.agents:
            vector = np.zeros(3, dtype=np.float32)
            if self.t == 0:
                vector[self.cues[agent]] = 1.0
            vector[2] = float(self.t == RECALL_STEPS - 1)
            out[agent] = vector
        return out

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        self.agents = list(self.possible_agents)
        self.cues = {agent: int(self.rng.integers(2)) for agent in self.agents}
        return self._observe(), {agent: {} for agent in self.agents}

    def step(self, actions):
        query = self.t == RECALL_STEPS - 1
        rewards = {a: float(query and int(actions[a]) == self.cues[a]) for a in self.agents}
        self.t += 1
        done = self.t >= RECALL_STEPS
        terminations = {a: done for a in self.agents}
        truncations = {a: False for a in self.agents}
        observations = self._observe()
        infos = {a: {} for a in self.agents}
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def close(self):
        pass


pettingzoo.register("parallel", "RlcliTest/recall-v0", entry_point=Recall)
