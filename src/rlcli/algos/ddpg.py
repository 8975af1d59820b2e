"""Deep Deterministic Policy Gradient (Lillicrap et al., 2016): TD3's machinery with a single
critic, an actor update after every critic update and no target smoothing."""

from __future__ import annotations

from dataclasses import replace

from rlcli.algos import td3
from rlcli.config.algos import DDPGConfig

# TD3's record with DDPG's config: the config's fields make the difference.
SPEC = replace(td3.SPEC, config=DDPGConfig)
