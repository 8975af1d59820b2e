"""Export of team runs: one file per group (per agent where the agents have their own weights), each taking one
agent's raw observation (its index, masks and memory where the group's policy reads them) and giving the
actions the trained team plays."""

from __future__ import annotations

import pytest
import torch

from rlcli import keys
from rlcli.config.errors import InputError
from rlcli.config.load import load_config
from rlcli.envs.teams import ALIVE, DONE, make_team_envs
from rlcli.play.export import export_policy, export_team, exports
from rlcli.play.playback import restored
from rlcli.play.policy_file import opened
from rlcli.run import build_run
from rlcli.trainer.loop import train
from support.teams import leavers, needs, team_config


def formats() -> list[str]:
    """pt2 always; onnx where the export extra is installed."""
    try:
        import onnxruntime  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError:
        return ["pt2"]
    return ["pt2", "onnx"]


def trained(cfg):
    return train(build_run(cfg)).run_dir


def played_alike(run_dir, reports, steps: int = 6) -> int:
    """Step the run's team envs with the trained team's deterministic actions and check that every file, fed
    each agent's observation (index, mask, memory), gives the same actions; returns the actions compared."""
    cfg = load_config(run_dir / "config.toml")
    team = restored(cfg, run_dir / "final.pt", torch.device("cpu"), render=False, source="test").agent
    envs = make_team_envs(cfg.env, 3, seed=7, device=torch.device("cpu"), state=False)
    carry = team.carry(3, torch.device("cpu"))
    files = [(report.metadata, opened(report.path)[1]) for report in reports]
    memory = {id(call): None for _, call in files}
    start, starting, compared = envs.reset(7).clone(), torch.ones(3, dtype=torch.bool), 0
    generator = torch.Generator().manual_seed(0)
    try:
        for _ in range(steps):
            carry.episode_starts(start, starting)
            first = {name: carry.groups[name].first for name in carry.groups}
            expected = team.actions(start, deterministic=True, generator=generator, carry=carry)
            for metadata, call in files:
                group = metadata["group"]
                agents = metadata["agents"]
                chosen = range(len(agents)) if "agent" not in metadata else [agents.index(metadata["agent"])]
                for i in chosen:
                    feeds = [start[group, "observation"][:, i]]
                    if "agent" in metadata["inputs"]:
                        feeds.append(torch.full((3,), i, dtype=torch.int64))
                    if "action_mask" in metadata["inputs"]:
                        feeds.append(start[group, keys.ACTION_MASK][:, i])
                    if "memory" in metadata["inputs"]:
                        state = memory.get((id(call), i))
                        if state is None:
                            state = torch.zeros(3, *metadata["memory_shape"])
                        feeds += [state, first[group].view(3, -1)[:, i]]
                    outputs = call(feeds)
                    if "memory" in metadata["inputs"]:
                        memory[(id(call), i)] = outputs[1]
                    alive = start[group, ALIVE][:, i]
                    torch.testing.assert_close(outputs[0][alive], expected[group, keys.ACTION][:, i][alive])
                    compared += int(alive.sum())
            after, fresh = envs.step({name: expected[name, keys.ACTION] for name in envs.layout.names})
            start, starting = fresh.clone(), after[DONE].clone()
    finally:
        envs.close()
    return compared


@pytest.mark.parametrize("fmt", formats())
def test_a_masked_team_exports_one_file_per_group_that_plays_as_the_team(tmp_path, fmt):
    leavers()
    cfg = team_config("mappo", "RlcliTest/leavers-v0", tmp_path=tmp_path, algo={"agent_index": True})
    run_dir = trained(cfg)
    reports = export_team(run_dir, format=fmt)
    assert [r.path.name for r in reports] == [f"policy.runner.{fmt}"]
    metadata = reports[0].metadata
    assert metadata["inputs"] == ["obs", "agent", "action_mask"] and metadata["outputs"] == ["action"]
    assert metadata["group"] == "runner" and metadata["agents"] == ["runner_0", "runner_1", "runner_2", "runner_3"]
    assert played_alike(run_dir, reports) > 0


def test_agents_with_their_own_weights_export_a_file_each(tmp_path):
    needs("vmas")
    cfg = team_config(
        "ippo", "vmas/balance", tmp_path=tmp_path, algo={"share_params": False}, env={"kwargs": {"n_agents": 2}}
    )
    run_dir = trained(cfg)
    reports = exports(run_dir, format="pt2", out=tmp_path / "files")
    assert [r.path.name for r in reports] == ["policy.agent.agent_0.pt2", "policy.agent.agent_1.pt2"]
    assert [r.metadata["agent"] for r in reports] == ["agent_0", "agent_1"]
    assert played_alike(run_dir, reports) > 0


def test_a_team_with_memory_exports_files_that_carry_each_agents_state(tmp_path):
    leavers()
    cfg = team_config(
        "ippo",
        "RlcliTest/recall-v0",
        tmp_path=tmp_path,
        frames=32,
        network={"hidden_sizes": [16], "memory": "gru", "memory_size": 8},
    )
    run_dir = trained(cfg)
    (report,) = export_team(run_dir, format="pt2")
    assert report.metadata["inputs"] == ["obs", "memory", "first"]
    assert report.metadata["outputs"] == ["action", "next_memory"]
    assert played_alike(run_dir, [report], steps=9) > 0


def test_single_agent_export_of_a_team_run_points_to_the_team_export(tmp_path):
    leavers()
    run_dir = trained(team_config("ippo", "RlcliTest/leavers-v0", tmp_path=tmp_path))
    with pytest.raises(InputError, match="one file per group"):
        export_policy(run_dir, format="pt2")
    (tmp_path / "taken").write_text("")
    with pytest.raises(InputError, match="a team run's policies go into a folder"):
        export_team(run_dir, format="pt2", out=tmp_path / "taken")
    # rlcli eval --policy plays one single-agent file: a team run's are refused, saying why.
    from rlcli.play.playback import evaluate_run

    (report,) = export_team(run_dir, format="pt2")
    with pytest.raises(InputError, match="one per group"):
        evaluate_run(run_dir, episodes=2, policy=report.path)
