"""Config models of the team algorithms, which train groups of agents on PettingZoo and VMAS envs: IPPO and
MAPPO, PPO's fields and loss per group, with the critic as the only difference."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from rlcli.config.algos.capabilities import POLICY_HEAD, Capabilities, Masks
from rlcli.config.algos.on_policy import PPOConfig

AGENT_INDEX = Field(
    False,
    description="Append each agent's one-hot index in its group to what its policy (and critic) reads, so that "
    "agents sharing one network can still act apart.",
)


SHARE_PARAMS = Field(
    True,
    description="One policy and one critic serve every agent of a group; false gives each agent weights of its "
    "own (its own policy and critic), run as one batched ensemble. The observation statistics stay the group's.",
)


def team_ppo(title: str, paper: str) -> Capabilities:
    """What the team PPO variants take: every agent's Box observation, the policy heads' action spaces and
    their masks, per agent, and a memory core per agent (shared weights)."""
    return Capabilities(
        title=title,
        paper=paper,
        observations=("Box",),
        actions=("Discrete", "MultiDiscrete", "Box"),
        masks=Masks(("Discrete", "MultiDiscrete"), POLICY_HEAD),
        samples="(their action distribution)",
        memory=True,
        teams=True,
    )


class _ApartChecks:
    """The checks of a team algorithm's section: ``share_params = false`` against the other ``[algo]`` fields;
    ``minibatch_size`` counts agents' rows, so its bound (a group's rollout, frames times agents) is checked
    when the env's groups are known (``build_run``), not against the frames here."""

    def check(self, *, collector, env) -> list[tuple[str, str]]:
        return []

    @model_validator(mode="after")
    def _apart_without_gsde(self):
        if not getattr(self, "share_params", True) and getattr(self, "use_sde", False):
            raise ValueError(
                "use_sde = true needs share_params = true: gSDE's noise matrices are the group's, and agents with "
                "weights of their own take none yet"
            )
        return self


class IPPOConfig(_ApartChecks, PPOConfig):
    CAPABILITIES: ClassVar[Capabilities] = team_ppo("IPPO", "[de Witt et al., 2020](https://arxiv.org/abs/2011.09533)")

    # PPO's fields and defaults (Stable-Baselines3's); the presets set BenchMARL's task settings.
    name: Literal["ippo"] = Field(  # type: ignore[assignment]
        description="Independent PPO: each group's agents share one policy and one critic, and each agent's "
        "critic reads its own observation."
    )
    agent_index: bool = AGENT_INDEX
    share_params: bool = SHARE_PARAMS


class MAPPOConfig(_ApartChecks, PPOConfig):
    CAPABILITIES: ClassVar[Capabilities] = team_ppo("MAPPO", "[Yu et al., 2022](https://arxiv.org/abs/2103.01955)")

    name: Literal["mappo"] = Field(  # type: ignore[assignment]
        description="Multi-agent PPO: each group's agents share one policy over their own observations and one "
        "centralized critic."
    )
    agent_index: bool = AGENT_INDEX
    share_params: bool = SHARE_PARAMS
    critic_input: Literal["auto", "state", "group", "all_groups"] = Field(
        "auto",
        description='What the centralized critic reads: "state" the env\'s global state() (PettingZoo envs that '
        'have one), "group" the observations of every agent of the group, concatenated, "all_groups" those of '
        'every agent of every group (a critic across heterogeneous groups); "auto" is "state" where the env has '
        'one, else "group". Each agent\'s one-hot index in its group is appended, so that the critic gives '
        "each agent a value of its own.",
    )
