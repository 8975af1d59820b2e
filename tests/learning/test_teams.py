"""The team learner: each group's rollout as ``N * agents`` columns, rows of absent agents counted in no
advantage and no gradient, centralized critic inputs, and small team runs in this process."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from rlcli import keys
from rlcli.play.playback import evaluate_run
from rlcli.run import build_run
from rlcli.timing import Timer
from rlcli.trainer.loop import train
from rlcli.trainer.state import Hooks
from support.run_folders import rows_of
from support.teams import leavers, needs, team_config


def _collected(tmp_path, algo="mappo", **algo_fields):
    leavers()
    cfg = team_config(algo, "RlcliTest/leavers-v0", tmp_path=tmp_path, algo=algo_fields)
    run = build_run(cfg)
    batch = run.source.next_batch(Timer(torch.device("cpu")))
    return run, batch


def test_rows_after_an_agent_left_give_no_gradient(tmp_path):
    run, batch = _collected(tmp_path)
    try:
        learner = run.algo.learners["runner"]
        view = run.algo.rollout(batch, "runner")
        flat = learner.rollout.rows(view.clone(), Timer(torch.device("cpu")))
        valid = flat[keys.VALID]
        assert 0 < int(valid.sum()) < valid.numel(), "the test env has absent agents in every rollout"

        def gradients(rows):
            learner.agent.zero_grad(set_to_none=True)
            learner.loss(rows)["loss/total"].backward()
            return [p.grad.clone() for p in learner.agent.parameters() if p.grad is not None]

        before = gradients(flat)
        # Whatever the absent agents' rows hold, the gradient stays the same.
        spoiled = flat.clone()
        gone = ~valid
        spoiled[keys.ADVANTAGE][gone] = 1e6
        spoiled[keys.VALUE_TARGET][gone] = -1e6
        spoiled[keys.LOG_PROB][gone] = -50.0
        spoiled[keys.ACTION][gone] = 0
        inputs = spoiled[keys.INPUT]
        inputs.set("observation", torch.where(gone[:, None], 99.0, inputs.get("observation")))
        after = gradients(spoiled)
        assert len(before) == len(after) > 0
        for a, b in zip(before, after):
            torch.testing.assert_close(a, b)
    finally:
        run.close()


def test_no_advantage_crosses_an_agents_end(tmp_path):
    run, batch = _collected(tmp_path, algo="ippo")
    try:
        learner = run.algo.learners["runner"]
        view = run.algo.rollout(batch, "runner")
        timer = Timer(torch.device("cpu"))
        first = learner.rollout.rows(view.clone(), timer)
        # Rewards of rows where an agent was absent change no valid row's advantage.
        spoiled = view.clone()
        spoiled[keys.REWARD][~spoiled[keys.VALID]] = 1000.0
        second = learner.rollout.rows(spoiled, timer)
        valid = first[keys.VALID]
        torch.testing.assert_close(first[keys.ADVANTAGE][valid], second[keys.ADVANTAGE][valid])
        # Every agent's last live step in the rollout ends its trace there: terminated, or the rollout's end.
        ended = view[keys.TERMINATED] | view[keys.TRUNCATED]
        live = view[keys.VALID]
        leaving = live[:-1] & ~live[1:]
        assert bool(ended[:-1][leaving].all())
    finally:
        run.close()


def test_mappo_critic_reads_the_state_and_the_policy_its_own_observation(tmp_path):
    needs("pettingzoo", "mpe2")
    cfg = team_config(
        "mappo",
        "mpe2/simple_spread_v3",
        tmp_path=tmp_path,
        env={"kwargs": {"N": 3, "max_cycles": 25}},
        algo={"agent_index": True},
    )
    run = build_run(cfg)
    try:
        inputs = run.algo.inputs["agent"]
        assert inputs.critic == "state"
        batch = run.source.next_batch(Timer(torch.device("cpu")))
        made = inputs(batch)
        # The policy's input: the agent's observation and its one-hot index; the critic's: the state and the index.
        own = batch["agent", keys.OBSERVATION]
        torch.testing.assert_close(made["observation"][..., :18], own)
        torch.testing.assert_close(made["observation"][0, 0, :, 18:], torch.eye(3))
        torch.testing.assert_close(made["critic"][..., 0, :54], batch["state"])
        torch.testing.assert_close(made["critic"][..., 2, :54], batch["state"])
        # The policy never reads the critic's input: changing it changes no action distribution.
        agent = run.algo.learners["agent"].agent
        rows = made[0, 0]
        moved = rows.clone()
        moved.set("critic", moved.get("critic") + 5.0)
        features = agent.features(agent.obs_norm(rows))[0]
        torch.testing.assert_close(features, agent.features(agent.obs_norm(moved))[0])
        assert not torch.equal(agent.state_value(agent.obs_norm(rows)), agent.state_value(agent.obs_norm(moved)))
    finally:
        run.close()


@pytest.mark.parametrize("algo", ["ippo", "mappo"])
def test_a_team_run_writes_per_group_columns_and_a_final_evaluation(tmp_path, algo):
    leavers()
    cfg = team_config(algo, "RlcliTest/leavers-v0", tmp_path=tmp_path, total=192)
    run = build_run(cfg)
    state = train(run)
    assert state.status == "completed"
    rows = rows_of(state.run_dir)
    assert len(rows) == 3
    assert {"loss/policy/runner", "loss/value/runner", "stats/approx_kl/runner"} <= set(rows[0])
    # One group: its return column is the run's.
    assert [row["rollout/episode_return_mean/runner"] for row in rows] == [
        row["rollout/episode_return_mean"] for row in rows
    ]
    assert all(row["rollout/episode_return_mean"] not in ("", "nan") for row in rows)
    final = json.loads((state.run_dir / "run.json").read_text())["final_eval"]
    assert final["episodes"] == 4 and 0.0 <= final["mean"] <= 6.0
    # rlcli eval plays the run's team from its folder, as the final evaluation did (the same default seed).
    report = evaluate_run(state.run_dir, episodes=4)
    assert report.result.episodes == 4 and report.result.mean == pytest.approx(final["mean"])


def test_rlcli_export_writes_a_team_runs_files_into_a_folder(cli, tmp_path):
    leavers()
    state = train(build_run(team_config("ippo", "RlcliTest/leavers-v0", tmp_path=tmp_path, total=64)))
    result = cli("export", str(state.run_dir), "--format", "pt2", "--out", str(tmp_path / "files"), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    (report,) = json.loads(result.stdout)
    assert report["path"] == str(tmp_path / "files" / "policy.runner.pt2")
    assert (tmp_path / "files" / "policy.runner.pt2").is_file()
    assert report["metadata"]["group"] == "runner"
    # A file where the folder should be: exit 2, naming the option.
    (tmp_path / "file").write_text("")
    result = cli("export", str(state.run_dir), "--format", "pt2", "--out", str(tmp_path / "file"))
    assert result.returncode == 2 and "--out" in result.stderr and "Traceback" not in result.stderr


def test_box_actions_train_with_gsde_on_vmas(tmp_path):
    needs("vmas")
    cfg = team_config(
        "ippo",
        "vmas/balance",
        tmp_path=tmp_path,
        env={"kwargs": {"n_agents": 2}, "max_episode_steps": 8},
        algo={"use_sde": True},
        total=128,
    )
    run = build_run(cfg)
    agent = run.algo.learners["agent"].agent
    before = [p.detach().clone() for p in agent.parameters()]
    state = train(run)
    assert state.status == "completed"
    assert any(not torch.equal(a, b) for a, b in zip(before, agent.parameters()))
    assert "stats/approx_kl/agent" in rows_of(state.run_dir)[-1]


def test_a_stopped_team_run_resumes_to_its_budget(tmp_path):
    leavers()
    cfg = team_config("mappo", "RlcliTest/leavers-v0", tmp_path=tmp_path, total=320)

    def stop_after_two(state):
        if state.iteration == 2:
            state.stop_requested = True

    stopped = train(build_run(cfg), hooks=Hooks(on_iteration_end=[stop_after_two]))
    assert stopped.status == "interrupted" and stopped.iteration == 2
    resumed = train(build_run(cfg), resume=stopped.run_dir)
    assert resumed.status == "completed" and resumed.frames == 320
    rows = rows_of(stopped.run_dir)
    assert [int(row["iteration"]) for row in rows] == [1, 2, 3, 4, 5]
    # The team's learners took their optimizer state back: the resumed run went on from it.
    assert all(row["loss/policy/runner"] not in ("", "nan") for row in rows)


@pytest.mark.parametrize(
    ("env", "kwargs", "extra"),
    [
        ("RlcliTest/leavers-v0", {}, "pettingzoo"),
        ("vmas/balance", {"n_agents": 2, "max_steps": 12}, "vmas"),
        ("mpe2/simple_spread_v3", {"N": 2, "max_cycles": 12}, "mpe2"),
    ],
)
def test_a_team_run_stopped_mid_episode_resumes_as_the_unbroken_run(tmp_path, env, kwargs, extra):
    leavers()
    needs(extra)
    # Rollouts of 5 steps, episodes of 6 (leavers) or 12: every stop falls mid-episode.
    cfg = team_config(
        "mappo",
        env,
        tmp_path=tmp_path / "unbroken",
        frames=20,
        total=200,
        env={"kwargs": kwargs},
        algo={"minibatch_size": 20},
    )
    unbroken = train(build_run(cfg))

    def stop_after_three(state):
        if state.iteration == 3:
            state.stop_requested = True

    stopped_cfg = cfg.model_copy(update={"run": cfg.run.model_copy(update={"output_dir": str(tmp_path / "stopped")})})
    stopped = train(build_run(stopped_cfg), hooks=Hooks(on_iteration_end=[stop_after_three]))
    assert stopped.status == "interrupted"
    resumed = train(build_run(stopped_cfg), resume=stopped.run_dir)
    assert resumed.status == "completed"
    info = json.loads((stopped.run_dir / "run.json").read_text())
    assert info["resumes"][0]["exact_envs"] is True
    # Every row (losses, returns, each group's) as the unbroken run wrote it: the envs went on mid-episode.
    assert rows_of(stopped.run_dir) == rows_of(unbroken.run_dir)
    final = json.loads((unbroken.run_dir / "run.json").read_text())["final_eval"]
    assert {k: v for k, v in info["final_eval"].items() if k != "seconds"} == {
        k: v for k, v in final.items() if k != "seconds"
    }


def test_two_groups_learn_apart_with_columns_of_their_own(tmp_path):
    needs("pettingzoo", "mpe2")
    cfg = team_config(
        "ippo",
        "mpe2/simple_tag_v3",
        tmp_path=tmp_path,
        env={"kwargs": {"num_good": 1, "num_adversaries": 2, "max_cycles": 8}},
        total=128,
    )
    run = build_run(cfg)
    assert set(run.algo.learners) == {"adversary", "agent"}
    # Each group has its own networks and optimizer.
    adversary, agent = run.algo.learners["adversary"], run.algo.learners["agent"]
    assert not {id(p) for p in adversary.agent.parameters()} & {id(p) for p in agent.agent.parameters()}
    state = train(run)
    row = rows_of(state.run_dir)[-1]
    for group in ("adversary", "agent"):
        assert row[f"loss/policy/{group}"] not in ("", "nan")
        assert row[f"rollout/episode_return_mean/{group}"] not in ("", "nan")
    total = float(row["rollout/episode_return_mean/adversary"]) + float(row["rollout/episode_return_mean/agent"])
    assert total == pytest.approx(float(row["rollout/episode_return_mean"]), rel=1e-6, abs=1e-6)
    # rlcli eval reports each group's return of the same episodes beside the team's, which is their sum.
    result = evaluate_run(state.run_dir, episodes=3).result
    assert set(result.groups) == {"adversary", "agent"}
    for k in range(3):
        assert result.returns[k] == pytest.approx(result.groups["adversary"][k] + result.groups["agent"][k])
    report = result.to_json()
    assert report["groups"]["agent"]["returns"] == result.groups["agent"]
    assert report["groups"]["agent"]["episodes"] == 3


def test_action_mask_none_ignores_the_envs_masks_in_acting_and_learning(tmp_path):
    leavers()
    masked = build_run(team_config("ippo", "RlcliTest/leavers-v0", tmp_path=tmp_path / "a"))
    unmasked = build_run(
        team_config("ippo", "RlcliTest/leavers-v0", tmp_path=tmp_path / "b", env={"action_mask": "none"})
    )
    try:
        timer = Timer(torch.device("cpu"))
        assert keys.ACTION_MASK in masked.source.next_batch(timer)["runner"].keys()
        assert keys.ACTION_MASK not in unmasked.source.next_batch(timer)["runner"].keys()
    finally:
        masked.close()
        unmasked.close()


def test_team_carry_starts_an_agents_memory_where_its_env_resets_and_where_it_joins():
    from tensordict import TensorDict

    from rlcli.learning.teams import TeamCarry
    from rlcli.models.memory import MemoryCore

    core = MemoryCore("gru", (4,), size=8, layers=1)

    class Agent:
        memory = core

    carry = TeamCarry({"runner": (Agent(), 3)}, 2, torch.device("cpu"))

    def step(alive, starting):
        observation = TensorDict(
            {"runner": TensorDict({"alive": torch.tensor(alive)}, batch_size=[2, 3])}, batch_size=[2]
        )
        carry.episode_starts(observation, torch.tensor(starting))
        return carry.groups["runner"].first.view(2, 3).tolist()

    # The first step starts every agent's episode; then only env 1's reset and the agent that joins in env 0.
    assert step([[True, True, False], [True, True, True]], [True, True]) == [[True] * 3, [True] * 3]
    assert step([[True, True, False], [True, True, True]], [False, False]) == [[False] * 3, [False] * 3]
    assert step([[True, True, True], [True, False, True]], [False, True]) == [[False, False, True], [True] * 3]
    # The carry keeps each agent's state across a save and a load.
    state = carry.state_dict()
    again = TeamCarry({"runner": (Agent(), 3)}, 2, torch.device("cpu"))
    again.load_state_dict(state)
    assert torch.equal(again.alive["runner"], carry.alive["runner"])


def test_a_recurrent_team_rollout_holds_each_agents_memory_and_episode_starts(tmp_path):
    leavers()
    cfg = team_config(
        "ippo",
        "RlcliTest/recall-v0",
        tmp_path=tmp_path,
        frames=32,
        network={"hidden_sizes": [16], "memory": "gru", "memory_size": 8},
    )
    run = build_run(cfg)
    try:
        batch = run.source.next_batch(Timer(torch.device("cpu")))
        group = batch["scout"]
        assert group[keys.MEMORY].shape[:3] == (8, 4, 2)
        first = group[keys.FIRST]
        # Episodes of 4 steps from a shared start: each agent's episode starts at steps 0 and 4.
        assert first[[0, 4]].all() and not first[[1, 2, 3, 5, 6, 7]].any()
        # The state each step started from: zeros before the first step, then carried (``first`` zeroes it at 4).
        memory = group[keys.MEMORY].flatten(3)
        assert memory[0].abs().sum() == 0
        assert all(memory[t].abs().sum() > 0 for t in (1, 2, 3, 5))
        # The group's learner trains on sequences of each agent's steps.
        terms = run.algo.learn(batch, Timer(torch.device("cpu")))
        assert torch.isfinite(torch.tensor(terms["loss/total/scout"]))
    finally:
        run.close()


def test_memory_and_masks_together_in_a_team_run_with_agents_that_leave(tmp_path):
    leavers()
    from rlcli_test_envs.teams import Leavers

    Leavers.forbidden = 0
    cfg = team_config(
        "mappo",
        "RlcliTest/leavers-v0",
        tmp_path=tmp_path,
        network={"hidden_sizes": [16], "memory": "gru", "memory_size": 8},
        algo={"minibatch_size": 64},
    )
    state = train(build_run(cfg))
    final = json.loads((state.run_dir / "run.json").read_text())["final_eval"]
    assert final["episodes"] == 4
    assert Leavers.forbidden == 0
    # rlcli eval replays the final evaluation's episodes from fresh memory.
    report = evaluate_run(state.run_dir, episodes=4)
    assert report.result.mean == pytest.approx(final["mean"])


def test_agents_apart_runs_each_agents_rows_through_its_own_weights():
    from torch import nn

    from rlcli.models.ensemble import AgentsApart

    torch.manual_seed(0)
    nets = [nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2)) for _ in range(3)]
    apart = AgentsApart(nets)
    x = torch.randn(4, 6, 3, 5)  # [T, N, agents, F]
    out = apart(x.flatten(1, 2))
    assert out.shape == (4, 18, 2)
    for agent, net in enumerate(nets):
        torch.testing.assert_close(out.view(4, 6, 3, 2)[:, :, agent], net(x[:, :, agent]))


def test_unshared_parameters_give_each_agent_its_own_weights_and_gradients(tmp_path):
    from rlcli.models.ensemble import AgentsApart

    leavers()
    cfg = team_config("ippo", "RlcliTest/leavers-v0", tmp_path=tmp_path, algo={"share_params": False})
    run = build_run(cfg)
    try:
        learner = run.algo.learners["runner"]
        agent = learner.agent
        assert isinstance(agent.policy.net, AgentsApart) and isinstance(agent.value.net, AgentsApart)
        assert agent.policy.net.agents == 4
        batch = run.source.next_batch(Timer(torch.device("cpu")))
        flat = learner.rollout.rows(run.algo.rollout(batch, "runner"), Timer(torch.device("cpu")))
        # Minibatches take whole frames: each of the four agents' rows, absent ones masked.
        assert flat.batch_size == (16 * 4, 4)
        only = flat.clone()
        only[keys.VALID][:, 1:] = False
        agent.zero_grad(set_to_none=True)
        learner.loss(only)["loss/total"].backward()
        first = agent.policy.net.layers[0].weight.grad
        # Only agent 0's rows count: only its weights get a gradient.
        assert first[0].abs().sum() > 0 and first[1:].abs().sum() == 0
    finally:
        run.close()
    # A whole run trains, and rlcli eval plays the final evaluation's episodes again.
    state = train(build_run(cfg.model_copy(update={"run": cfg.run.model_copy(update={"name": "apart"})})))
    final = json.loads((state.run_dir / "run.json").read_text())["final_eval"]
    assert evaluate_run(state.run_dir, episodes=4).result.mean == pytest.approx(final["mean"])


@pytest.mark.parametrize(
    ("sections", "field", "words"),
    [
        ({"algo": {"share_params": False, "use_sde": True}}, "algo", "use_sde = true needs share_params = true"),
        ({"algo": {"share_params": False}, "network": {"memory": "gru"}}, "network.memory", "share_params = true"),
    ],
)
def test_unshared_parameters_refuse_what_they_do_not_take_yet(tmp_path, sections, field, words):
    from rlcli.config.errors import ConfigError

    needs("vmas")
    with pytest.raises(ConfigError) as caught:
        team_config("mappo", "vmas/balance", tmp_path=tmp_path, **sections)
    assert field in str(caught.value) and words in str(caught.value)


# VMAS draws through pyglet, which looks its libraries up with ldconfig (a process): integration layer.
@pytest.mark.parametrize("env", [pytest.param("vmas/balance", marks=pytest.mark.integration), "mpe2/simple_spread_v3"])
def test_a_team_evaluation_records_the_first_envs_first_episode(tmp_path, env):
    from rlcli.play.team_evaluation import TeamEvaluator

    needs("vmas" if env.startswith("vmas") else "mpe2")
    kwargs = {"n_agents": 2, "max_steps": 5} if env.startswith("vmas") else {"N": 2, "max_cycles": 5}
    cfg = team_config("mappo", env, tmp_path=tmp_path, env={"kwargs": kwargs})
    run = build_run(cfg)
    try:
        evaluator = TeamEvaluator(
            run.algo.agent, cfg.env, episodes=3, deterministic=False, seed=3, device="cpu", render=True
        )
        frames: list = []
        result = evaluator(frames_sink=lambda frame: frames.append(frame.copy()))
        evaluator.close()
    finally:
        run.close()
    assert result.episodes == 3
    # The reset's frame, then one after each step of the first episode (five) but the last: the env resets in
    # the step that ends its episode.
    assert len(frames) == result.lengths[0] == 5
    assert all(f.dtype == np.uint8 and f.ndim == 3 and f.shape[-1] == 3 for f in frames)
    # The agents move (sampled actions): the frames show them.
    assert any(not np.array_equal(frames[0], f) for f in frames[1:])


@pytest.mark.integration
def test_rlcli_eval_writes_a_team_runs_video(cli, tmp_path):
    needs("vmas")
    cfg = team_config("mappo", "vmas/balance", tmp_path=tmp_path, env={"kwargs": {"n_agents": 2, "max_steps": 8}})
    state = train(build_run(cfg))
    video = tmp_path / "team.mp4"
    result = cli("eval", state.run_dir, "--episodes", "2", "--video", video)
    assert result.returncode == 0, result.stdout + result.stderr
    assert video.stat().st_size > 0


def test_a_minibatch_larger_than_a_groups_rollout_is_refused_when_the_groups_are_known(tmp_path):
    from rlcli.config.errors import ConfigError

    leavers()
    # 64 frames of 4 agents: 256 rows. The frames alone would not bound it: minibatches count agents' rows.
    build_run(team_config("ippo", "RlcliTest/leavers-v0", tmp_path=tmp_path, algo={"minibatch_size": 256})).close()
    with pytest.raises(ConfigError) as caught:
        build_run(team_config("ippo", "RlcliTest/leavers-v0", tmp_path=tmp_path, algo={"minibatch_size": 257}))
    message = str(caught.value)
    assert "algo.minibatch_size" in message and "group 'runner'" in message and "64 x 4 agents" in message
