"""Multi-agent PPO (Yu et al., 2022): PPO per group of a team, with a centralized critic (the env's state,
the group's observations or every group's) and a policy on each agent's own observation."""

from __future__ import annotations

from rlcli.algos import ppo
from rlcli.algos.context import BuildContext
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import MAPPOConfig
from rlcli.learning.teams import TeamAgent, TeamLearner


def build(cfg: MAPPOConfig, ctx: BuildContext) -> TeamLearner:
    """PPO's learner for each group of ``ctx.team``, its critic reading ``cfg.critic_input``."""
    return TeamLearner(cfg, ctx, ppo.PPO, critic=cfg.critic_input)


def build_agent(cfg: MAPPOConfig, ctx: BuildContext) -> TeamAgent:
    """Every group's actor-critic alone, for evaluation."""
    return TeamLearner(cfg, ctx, ppo.PPO, critic=cfg.critic_input).agent


SPEC = AlgorithmSpec(config=MAPPOConfig, build=build, build_agent=build_agent, phases=ppo.PHASES, metrics=ppo.METRICS)
