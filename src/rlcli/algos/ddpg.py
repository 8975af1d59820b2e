"""Deep Deterministic Policy Gradient (Lillicrap et al., 2016): TD3's machinery with a single
critic, an actor update after every critic update and no target smoothing."""

from __future__ import annotations

from gymnasium import spaces as gspaces

from rlcli.algos.td3 import METRICS, PHASES, build, build_agent
from rlcli.config.algos import DDPGConfig

CONFIG = DDPGConfig
SUPPORTS = {"observation": (gspaces.Box, gspaces.Discrete, gspaces.Dict), "action": (gspaces.Box,)}
__all__ = ["CONFIG", "SUPPORTS", "PHASES", "METRICS", "build", "build_agent"]
