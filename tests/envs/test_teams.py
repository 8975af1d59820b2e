"""Team envs: ids in PettingZoo's registry (MPE2's registered by rlcli) and VMAS's, agents grouped by name or
by ``[env] groups``, padded to the possible agents with an ``alive`` mask, resetting in the step an episode ends."""

from __future__ import annotations

import pytest
import torch

from rlcli.config.errors import ConfigError
from rlcli.envs.teams import group_agents, group_name, make_team_envs, team_id_problem, team_kind
from support.teams import leavers, needs, team_config


def test_group_name_strips_the_trailing_index():
    assert group_name("adversary_0") == "adversary"
    assert group_name("agent_12") == "agent"
    assert group_name("leader") == "leader"
    grouped, problems = group_agents(["adversary_0", "adversary_1", "agent_0"], None)
    assert grouped == {"adversary": ("adversary_0", "adversary_1"), "agent": ("agent_0",)} and problems == []


def test_a_groups_table_names_every_agent_once():
    possible = ["a_0", "a_1", "b_0"]
    _, problems = group_agents(possible, {"x": ["a_0", "a_0"], "y": ["c_9"]})
    text = " ".join(problems)
    assert "'c_9'" in text and "not an agent" in text
    assert "'a_0' is in both" in text
    assert "no group holds 'a_1', 'b_0'" in text
    grouped, problems = group_agents(possible, {"x": ["b_0"], "y": ["a_1", "a_0"]})
    assert problems == [] and grouped == {"x": ("b_0",), "y": ("a_1", "a_0")}


def test_ids_are_resolved_by_registry():
    needs("pettingzoo", "mpe2", "vmas")
    assert team_kind("mpe2/simple_spread_v3") == "pettingzoo"
    assert team_kind("butterfly/pistonball-v6") == "pettingzoo"
    assert team_kind("vmas/balance") == "vmas"
    assert team_kind("CartPole-v1") is None
    assert "did you mean" in team_id_problem("vmas/balanse", [])
    aec = team_id_problem("classic/tictactoe-v3", [])
    assert "turn-based (AEC)" in aec and "aec_to_parallel" in aec
    unknown = team_id_problem("nowhere/nothing-v0", ["CartPole-v1"])
    assert "unknown gymnasium env id 'nowhere/nothing-v0'" in unknown and "PettingZoo's parallel registry" in unknown


def test_mpe2_steps_padded_groups_and_resets_in_the_same_step():
    needs("pettingzoo", "mpe2")
    from types import SimpleNamespace

    cfg = SimpleNamespace(
        id="mpe2/simple_tag_v3",
        kwargs={"num_good": 1, "num_adversaries": 2, "max_cycles": 5},
        max_episode_steps=None,
        groups=None,
        action_mask="auto",
    )
    envs = make_team_envs(cfg, 3, seed=0, device=torch.device("cpu"))
    try:
        assert envs.layout.names == ("adversary", "agent")
        assert envs.layout.group("adversary").agents == ("adversary_0", "adversary_1")
        assert envs.layout.state_space is not None
        start = envs.reset(0)
        assert start["adversary", "observation"].shape[:2] == (3, 2) and bool(start["agent", "alive"].all())
        for step in range(1, 6):
            actions = {g.name: torch.randint(0, 5, (3, g.size)) for g in envs.layout.groups}
            after, start = envs.step(actions)
            # max_cycles 5: every env's episode ends at its 5th step, truncated for every agent.
            assert bool(after["done"].all()) == (step == 5)
        assert bool(after["adversary", "truncated"].all()) and not bool(after["adversary", "terminated"].any())
        assert after["state"].shape == (3, *envs.layout.state_space.shape)
    finally:
        envs.close()


def test_agents_that_leave_and_join_are_masked_out():
    leavers()
    from types import SimpleNamespace

    cfg = SimpleNamespace(id="RlcliTest/leavers-v0", kwargs={}, max_episode_steps=None, groups=None, action_mask="auto")
    envs = make_team_envs(cfg, 2, seed=3, device=torch.device("cpu"))
    try:
        group = envs.layout.group("runner")
        assert group.agents == ("runner_0", "runner_1", "runner_2", "runner_3") and group.action_mask
        start = envs.reset(3)
        alive = [start["runner", "alive"][0].tolist()]
        for _ in range(6):
            actions = {"runner": torch.zeros(2, 4, dtype=torch.int64)}
            after, start = envs.step(actions)
            alive.append(start["runner", "alive"][0].tolist())
            if len(alive) == 3:
                # runner_0 left after step 2: terminated at its last step, then absent.
                assert after["runner", "terminated"][0].tolist() == [True, False, False, False]
        assert alive[0] == [True, True, True, False]
        assert alive[2] == [False, True, True, True]
        assert alive[4] == [False, False, True, True]
        # The episode ended at step 6 and the envs reset in that step.
        assert bool(after["done"].all()) and alive[6] == [True, True, True, False]
        assert start["runner", "action_mask"].dtype == torch.bool and not bool(start["runner", "action_mask"].all())
    finally:
        envs.close()


def test_vmas_steps_every_env_in_one_simulator():
    needs("vmas")
    from types import SimpleNamespace

    cfg = SimpleNamespace(id="vmas/balance", kwargs={"n_agents": 3}, max_episode_steps=4, groups=None)
    envs = make_team_envs(cfg, 5, seed=0, device=torch.device("cpu"))
    try:
        assert envs.layout.names == ("agent",) and envs.layout.group("agent").size == 3
        envs.reset(0)
        for _ in range(4):
            after, _start = envs.step({"agent": torch.zeros(5, 3, 2)})
        assert bool(after["done"].all()) and bool(after["agent", "truncated"].all())
        assert after["agent", "reward"].shape == (5, 3)
    finally:
        envs.close()


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"algo": {"name": "ppo"}}, "is a team env"),
        ({"env": {"id": "CartPole-v1"}}, "trains teams of agents"),
        ({"env": {"id": "classic/tictactoe-v3"}}, "turn-based (AEC)"),
    ],
)
def test_bad_team_configs_name_what_fits(tmp_path, change, needle):
    needs("pettingzoo", "mpe2")
    with pytest.raises(ConfigError) as caught:
        team_config("mappo", "mpe2/simple_spread_v3", tmp_path=tmp_path, **change)
    assert needle in str(caught.value)


def test_a_group_of_agents_with_different_spaces_is_refused(tmp_path):
    needs("pettingzoo", "mpe2")
    from rlcli.run import build_run

    cfg = team_config(
        "mappo",
        "mpe2/simple_tag_v3",
        tmp_path=tmp_path,
        env={"kwargs": {"num_good": 1, "num_adversaries": 1}, "groups": {"all": ["adversary_0", "agent_0"]}},
    )
    with pytest.raises(ConfigError) as caught:
        build_run(cfg)
    assert "observation spaces differ" in str(caught.value) and "adversary_0" in str(caught.value)


def test_state_critic_without_a_state_is_refused(tmp_path):
    needs("vmas")
    from rlcli.run import build_run

    cfg = team_config("mappo", "vmas/balance", tmp_path=tmp_path, algo={"critic_input": "state"})
    with pytest.raises(ConfigError) as caught:
        build_run(cfg)
    assert "has no global state" in str(caught.value)
