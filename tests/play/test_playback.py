"""``evaluate_run`` from Python: a run folder's policy played from its own config and weights,
with the agent alone built (no optimizer, no replay buffer) and nothing written in the folder."""

import pytest
import torch

from rlcli.config.errors import ConfigError
from rlcli.config.load import load_config, validate_data
from rlcli.play.evaluation import SEED_OFFSET
from rlcli.play.playback import built_agent, evaluate_run
from rlcli.run import build_run
from rlcli.trainer.loop import train


@pytest.fixture(scope="module")
def dqn_folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    state = train(
        build_run(
            validate_data(
                {
                    "run": {"seed": 2, "device": "cpu", "output_dir": str(out)},
                    "env": {"id": "CartPole-v1", "num_envs": 2, "vectorization": "vector_entry_point"},
                    "algo": {"name": "dqn", "batch_size": 8, "learning_starts": 16, "replay": {"capacity": 500}},
                    "collector": {"frames_per_batch": 16, "total_frames": 64},
                    "timing": {"enabled": False},
                }
            )
        )
    )
    return state.run_dir


def listing(folder):
    return sorted((str(p.relative_to(folder)), p.stat().st_mtime_ns) for p in folder.rglob("*"))


def test_a_run_folder_plays_its_final_weights_with_the_default_seed_and_writes_nothing(dqn_folder):
    before = listing(dqn_folder)
    report = evaluate_run(dqn_folder, episodes=3)
    again = evaluate_run(dqn_folder / "final.pt", episodes=3)
    assert listing(dqn_folder) == before
    assert (report.algo, report.env, report.checkpoint) == ("dqn", "CartPole-v1", dqn_folder / "final.pt")
    assert report.seed == 2 + SEED_OFFSET and report.deterministic and report.device == "cpu"
    assert report.result.episodes == 3 and report.result == again.result
    # CartPole pays 1 a step.
    assert report.result.returns == [float(n) for n in report.result.lengths]


def test_only_the_agent_is_built_so_a_replay_too_large_to_allocate_does_not_matter(dqn_folder, tmp_path):
    copy = tmp_path / "run"
    copy.mkdir()
    for name in ("final.pt", "run.json"):
        (copy / name).write_bytes((dqn_folder / name).read_bytes())
    text = (dqn_folder / "config.toml").read_text(encoding="utf-8")
    assert "capacity = 500" in text
    # Two billion transitions: no machine here has the memory that building the buffer would check for.
    (copy / "config.toml").write_text(text.replace("capacity = 500", "capacity = 2147483647"), encoding="utf-8")
    report = evaluate_run(copy, episodes=2, seed=5)
    assert report.result.episodes == 2 and report.seed == 5


def test_an_offline_config_on_an_env_it_cannot_serve_names_the_algorithms_that_learn_from_datasets():
    # The same check as build_run's: an offline config's message names the algorithms that learn from a
    # dataset (BC takes Discrete actions), not those that learn from envs (DQN, PPO...).
    cfg = load_config("iql_pendulum_medium", ["env.id='CartPole-v1'", "env.normalize_observation=false"])
    with pytest.raises(ConfigError) as caught:
        built_agent(cfg, torch.device("cpu"), source="iql.toml")
    message = caught.value.issues[0].message
    assert "CartPole-v1 has action space Discrete(2), which iql does not support" in message
    assert message.endswith("the algorithms that learn from a dataset with such actions: bc")
