"""Independent PPO (de Witt et al., 2020): PPO per group of a team, each agent's critic on its own observation."""

from __future__ import annotations

from rlcli.algos import ppo
from rlcli.algos.context import BuildContext
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import IPPOConfig
from rlcli.learning.teams import TeamAgent, TeamLearner


def build(cfg: IPPOConfig, ctx: BuildContext) -> TeamLearner:
    """PPO's learner for each group of ``ctx.team``, its critic reading each agent's own observation."""
    return TeamLearner(cfg, ctx, ppo.PPO, critic="own")


def build_agent(cfg: IPPOConfig, ctx: BuildContext) -> TeamAgent:
    """Every group's actor-critic alone, for evaluation."""
    return TeamLearner(cfg, ctx, ppo.PPO, critic="own").agent


SPEC = AlgorithmSpec(config=IPPOConfig, build=build, build_agent=build_agent, phases=ppo.PHASES, metrics=ppo.METRICS)
