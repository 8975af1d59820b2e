"""Deep Deterministic Policy Gradient (Lillicrap et al., 2016): TD3's machinery with a single
critic, an actor update after every critic update and no target smoothing."""

from __future__ import annotations

from rlcli.algos.context import BuildContext
from rlcli.algos.spec import AlgorithmSpec
from rlcli.algos.td3 import (
    METRICS,
    PHASES,
    TD3,
    TOTAL,
    DeterministicAgent,
    Twin,
    deterministic_agent,
    deterministic_learner,
)
from rlcli.config.algos import DDPGConfig

# What makes TD3's machinery DDPG; not config fields, so a config cannot set them.
SINGLE = Twin(num_critics=1, policy_delay=1, target_noise=0.0, target_noise_clip=0.0)
"""DDPG's :class:`~rlcli.algos.td3.Twin`: one critic, an actor step after every critic step, no smoothing."""


def build_agent(cfg: DDPGConfig, ctx: BuildContext) -> DeterministicAgent:
    """DDPG's deterministic actor (``network.policy_sizes``), its critic (``value_sizes``), their targets and
    the observation statistics, on the device."""
    return deterministic_agent(cfg, ctx, num_critics=SINGLE.num_critics)


def build(cfg: DDPGConfig, ctx: BuildContext) -> TD3:
    """DDPG for ``ctx``'s spaces (a Box action space): TD3's machinery with :data:`SINGLE`.

    Raises:
        ConfigError: the buffer would not fit in free memory (or disk), or its folder is not writable.
    """
    return deterministic_learner(cfg, ctx, SINGLE)


SPEC = AlgorithmSpec(
    config=DDPGConfig,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    metrics=METRICS,
    total=TOTAL,
)
