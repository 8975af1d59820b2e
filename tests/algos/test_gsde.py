"""gSDE (``[algo] use_sde``) in the algorithms that take it: each trains on Pendulum-v1 and resumes exactly,
collection acts with the held noise matrices, export writes the mean and refuses ``--stochastic``, and bad
input exits 2 through ``rlcli validate``."""

from __future__ import annotations

import csv

import pytest
import torch

from rlcli.config.algos import TEAMS, WITH_GSDE
from rlcli.config.load import validate_data
from rlcli.models.gsde import SquashedStateDependentActor, StateDependentHead
from rlcli.run import build_run
from rlcli.trainer.loop import train
from rlcli.trainer.state import Hooks
from support.cli import invoke

# Each algorithm's settings for a few iterations of 64 frames that learn from the second on.
ALGOS = {
    "ppo": {"minibatch_size": 32, "epochs": 2},
    "a2c": {},
    "trpo": {"value_epochs": 1, "value_minibatch_size": 32},
    "sac": {"learning_starts": 64, "batch_size": 16, "utd_ratio": 0.25, "replay": {"capacity": 1000}},
    "tqc": {"learning_starts": 64, "batch_size": 16, "utd_ratio": 0.25, "quantiles": 5, "replay": {"capacity": 1000}},
}


def gsde_config(tmp_path, name: str, **algo):
    return validate_data(
        {
            "run": {"seed": 3, "device": "cpu", "output_dir": str(tmp_path)},
            "env": {"id": "Pendulum-v1", "num_envs": 2, "vectorization": "sync"},
            "network": {"hidden_sizes": [16, 16], "log_std_init": -1.0, "full_std": name != "a2c"},
            "algo": {"name": name, "use_sde": True, "sde_sample_freq": 4, **ALGOS[name], **algo},
            "collector": {"frames_per_batch": 64, "total_frames": 320},
            "checkpoint": {"every_frames": 0},
            "eval": {"final_episodes": 0},
            "timing": {"enabled": False},
        }
    )


def rows(folder) -> list[dict[str, str]]:
    with (folder / "metrics.csv").open() as file:
        return [
            {k: v for k, v in row.items() if not k.startswith("time/") and k not in ("wall_time_s", "fps")}
            for row in csv.DictReader(file)
        ]


def stop_after(iterations: int):
    def hook(state):
        if state.iteration == iterations:
            state.stop_requested = True

    return hook


def test_the_algorithms_with_gsde_are_those_the_task_names():
    # The team algorithms take PPO's fields, gSDE's among them (tests/learning/test_teams.py trains them with it).
    assert set(WITH_GSDE) - set(TEAMS) == set(ALGOS)


@pytest.mark.parametrize("name", sorted(ALGOS))
def test_each_algorithm_trains_with_gsde_and_resumes_exactly(tmp_path, name):
    unbroken = train(build_run(gsde_config(tmp_path / "a", name)))
    assert unbroken.status == "completed"
    stopped = train(build_run(gsde_config(tmp_path / "b", name)), hooks=Hooks(on_iteration_end=[stop_after(2)]))
    assert stopped.status == "interrupted"
    resumed = train(build_run(gsde_config(tmp_path / "b", name)), resume=stopped.run_dir)
    assert resumed.status == "completed"
    expected = rows(unbroken.run_dir)
    assert len(expected) == 5 and expected[-1]["loss/total"] != ""
    assert rows(resumed.run_dir) == expected


def test_a_recurrent_ppo_trains_with_gsde_and_resumes_exactly(tmp_path):
    """sb3-contrib's RecurrentPPO takes gSDE too: the latent is the MLP's last layer after the memory."""

    def config(folder):
        cfg = gsde_config(folder, "ppo")
        network = cfg.network.model_copy(update={"memory": "lstm", "memory_size": 16})
        return cfg.model_copy(update={"network": network})

    run = build_run(config(tmp_path / "a"))
    assert run.algo.agent.memory is not None and isinstance(run.algo.agent.policy, StateDependentHead)
    unbroken = train(run)
    stopped = train(build_run(config(tmp_path / "b")), hooks=Hooks(on_iteration_end=[stop_after(2)]))
    resumed = train(build_run(config(tmp_path / "b")), resume=stopped.run_dir)
    assert unbroken.status == resumed.status == "completed"
    assert rows(resumed.run_dir) == rows(unbroken.run_dir)


def held(algo):
    """The noise schedule a gSDE algorithm collects with."""
    return algo.rollout.exploration if hasattr(algo, "rollout") else algo.exploration


@pytest.mark.parametrize("name", ["ppo", "sac"])
def test_collection_acts_with_the_held_matrices_drawn_again_every_sample_freq_steps(tmp_path, name):
    run = build_run(gsde_config(tmp_path, name, learning_starts=0) if name == "sac" else gsde_config(tmp_path, name))
    try:
        algo, agent = run.algo, run.algo.agent
        obs = torch.randn(2, 3)
        generator = torch.Generator().manual_seed(0)
        drawn = []
        for _ in range(6):
            action = algo.act(obs, generator)["action"]
            matrices = held(algo).matrices
            drawn.append(matrices.clone())
            # The action is the mean plus z @ E of each env's held matrix (squashed into the bounds for SAC).
            if isinstance(agent.policy if name == "ppo" else agent.actor, StateDependentHead):
                dist = agent.policy(agent.encoder(agent.obs_norm(obs)))
                expected = dist.normal.loc + torch.bmm(dist.latent[:, None], matrices)[:, 0]
            else:
                assert isinstance(agent.actor, SquashedStateDependentActor)
                expected, _ = agent.actor(agent.obs_norm(obs), noise=matrices)
            torch.testing.assert_close(action, expected)
    finally:
        run.close()
    same = [torch.equal(drawn[i], drawn[i - 1]) for i in range(1, 6)]
    # sde_sample_freq 4: drawn at the rollout's first step and again at its fifth.
    assert same == [True, True, True, False, True]


def test_without_use_sde_the_heads_and_the_saved_state_are_as_before(tmp_path):
    for name in ("ppo", "sac"):
        run = build_run(gsde_config(tmp_path, name, use_sde=False))
        try:
            state = run.algo.state_dict()
            parts = list(run.algo.agent.modules())
        finally:
            run.close()
        assert "exploration" not in state and "rollout" not in state
        assert not any(isinstance(p, (StateDependentHead, SquashedStateDependentActor)) for p in parts)


@pytest.fixture(scope="module")
def ppo_gsde_run(tmp_path_factory):
    cfg = gsde_config(tmp_path_factory.mktemp("gsde"), "ppo", sde_sample_freq=-1)
    return train(build_run(cfg)).run_dir


def test_export_writes_the_mean_and_refuses_stochastic_naming_gsde(ppo_gsde_run, tmp_path):
    from rlcli.play.export import deployed, export_policy
    from rlcli.play.policy_file import PolicyFile
    from rlcli.trainer.checkpoint_folder import find_checkpoint

    report = export_policy(ppo_gsde_run, format="pt2", out=tmp_path / "policy.pt2")
    _, weights = find_checkpoint(ppo_gsde_run)
    module, _, _ = deployed(ppo_gsde_run, weights)
    obs = torch.randn(16, 3)
    with torch.no_grad():
        eager = module(obs)
    torch.testing.assert_close(PolicyFile(report.path).actions(obs, deterministic=True), eager)
    result = invoke("export", ppo_gsde_run, "--format", "pt2", "--stochastic", "--out", tmp_path / "s.pt2")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    message = " ".join(result.stderr.split())
    assert "explores with gSDE (use_sde)" in message and "Export without --stochastic" in message
    assert not (tmp_path / "s.pt2").exists()


def test_a_gsde_run_evaluates_with_sampled_and_deterministic_actions(ppo_gsde_run):
    for extra in ([], ["--stochastic"]):
        result = invoke("eval", ppo_gsde_run, "--episodes", "1", *extra)
        assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("preset", "overrides", "field", "words"),
    [
        ("dqn_cartpole", ["algo.use_sde=true"], "algo.use_sde", "dqn has no gSDE (use_sde)"),
        ("td3_pendulum", ["algo.sde_sample_freq=4"], "algo.sde_sample_freq", "td3 has no gSDE"),
        ("ppo_pendulum", ["algo.use_sde=true", "algo.sde_sample_freq=0"], "algo.sde_sample_freq", "0 is not allowed"),
        ("sac_pendulum", ["algo.use_sde=true", "algo.sde_sample_freq=-2"], "algo.sde_sample_freq", "-2 is not allowed"),
        (
            "tqc_pendulum",
            ["algo.use_sde=true", "algo.exploration_hold=8"],
            "algo.exploration_hold",
            "set exploration_hold = 1, or use_sde = false",
        ),
    ],
)
def test_bad_gsde_settings_exit_2_naming_the_field_and_what_is_allowed(preset, overrides, field, words):
    args = [item for override in overrides for item in ("--set", override)]
    result = invoke("validate", f"presets/{preset}.toml", *args, "--json")
    assert result.returncode == 2 and "Traceback" not in result.stdout + result.stderr
    text = " ".join(result.stdout.split())
    assert f'"path": "{field}"' in text and words in text
    if "has no gSDE" in words:
        assert ", ".join(WITH_GSDE) in text and "trpo" in WITH_GSDE
    if "is not allowed" in words:
        assert "allowed: -1" in text and "N >= 1" in text


def test_gsde_on_discrete_actions_exits_2_at_build():
    result = invoke("validate", "--build", "presets/ppo_cartpole.toml", "--set", "algo.use_sde=true", "--json")
    assert result.returncode == 2 and "Traceback" not in result.stdout + result.stderr
    text = " ".join(result.stdout.split())
    assert '"path": "algo.use_sde"' in text
    assert "CartPole-v1 has action space Discrete(2)" in text and "needs a Box action space" in text
