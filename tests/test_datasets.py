"""Minari datasets read into tensors (rlcli.datasets), offline runs through the real trainer and
``rlcli train`` (in this process, through Typer's runner), and the bad input around them. Datasets
are small ones of random actions (tests/support/offline.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rlcli.config.errors import ConfigError, InputError
from rlcli.config.load import validate_data
from rlcli.datasets import dataset_bytes, load_dataset, open_dataset
from rlcli.run import build_run
from rlcli.trainer.loop import train
from support.cli import assert_bad_input
from support.offline import random_dataset
from support.paths import PRESETS
from support.presets import MISSING_EXTRAS

minari = pytest.importorskip("minari", reason="the minari extra needs Python 3.11+")


def offline_config(tmp_path, dataset: str, *, algo: str = "iql", env: str = "Pendulum-v1", **sections) -> dict:
    return {
        "run": {"seed": 0, "device": "cpu", "output_dir": str(tmp_path)},
        "env": {"id": env, "num_envs": 2},
        "network": {"hidden_sizes": [16, 16]},
        "algo": {"name": algo, "batch_size": 16},
        "data": {"dataset": dataset, "total_steps": 40, "steps_per_iteration": 20},
        # No final evaluation: 100 Pendulum episodes would cost seconds, and no test reads it.
        "eval": {"every_steps": 20, "episodes": 2, "final_episodes": 0},
        "timing": {"enabled": False},
        **sections,
    }


def test_a_dataset_loads_the_transitions_minari_iterates():
    path = random_dataset("Pendulum-v1", episodes=3)
    data = load_dataset(open_dataset(path))
    episodes = list(minari.MinariDataset(f"{path}/data").iterate_episodes())
    assert data.transitions == sum(len(e.rewards) for e in episodes) and data.episodes == 3
    start = 0
    for episode in episodes:
        length = len(episode.rewards)
        rows = data.rows[start : start + length]
        assert np.allclose(data.observations[rows].numpy(), episode.observations[:-1])
        assert np.allclose(data.observations[rows + 1].numpy(), episode.observations[1:])
        assert np.allclose(data.actions[start : start + length].numpy(), episode.actions)
        assert np.allclose(data.rewards[start : start + length].numpy(), episode.rewards, atol=1e-5)
        assert data.terminated[start : start + length].tolist() == list(episode.terminations)
        assert data.truncated[start : start + length].tolist() == list(episode.truncations)
        start += length
    # Each observation once: a next observation is never a copy.
    assert data.observations.shape[0] == data.transitions + data.episodes
    assert data.nbytes == dataset_bytes(
        data.observation_space, data.action_space, steps=data.transitions, episodes=data.episodes
    )


def test_an_unknown_id_names_where_it_looked_and_the_close_ids(tmp_path, monkeypatch, offline_root):
    random_dataset("Pendulum-v1", episodes=3)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(offline_root))
    with pytest.raises(InputError) as info:
        open_dataset("test/pendulum-v1-random3-0-v1")
    text = str(info.value)
    assert str(offline_root) in text and "test/pendulum-v1-random3-0-v0" in text
    (tmp_path / "plain").mkdir()
    with pytest.raises(InputError, match="not a Minari dataset"):
        open_dataset(str(tmp_path / "plain"))


def test_damaged_metadata_and_a_dataset_too_large_are_refused_before_loading(tmp_path):
    import shutil

    source = random_dataset("Pendulum-v1", episodes=3)
    broken = tmp_path / "broken"
    shutil.copytree(source, broken)
    (broken / "data" / "metadata.json").write_text("{not json")
    with pytest.raises(InputError, match="cannot be read as a Minari dataset"):
        open_dataset(str(broken))
    huge = tmp_path / "huge"
    shutil.copytree(source, huge)
    meta = json.loads((huge / "data" / "metadata.json").read_text())
    meta["total_steps"] = 10**13
    (huge / "data" / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(InputError) as info:
        load_dataset(open_dataset(str(huge)))
    assert "10,000,000,000,000 transitions" in str(info.value) and "is free" in str(info.value)


def test_an_offline_run_counts_gradient_steps_and_reads_its_evaluation_as_the_return(tmp_path):
    cfg = validate_data(offline_config(tmp_path, random_dataset("Pendulum-v1")))
    state = train(build_run(cfg))
    assert state.status == "completed" and state.frames == 40 and state.iteration == 2
    rows = [json.loads(line) for line in (state.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["frames"] for row in rows] == [20, 40]
    # The return column is the evaluation's mean over its episodes, every row.
    assert all(row["rollout/episode_return_mean"] == pytest.approx(row["eval/return_mean"]) for row in rows)
    assert all(row["stats/gradient_steps"] == 20 for row in rows)
    run = json.loads((state.run_dir / "run.json").read_text())
    assert run["planned_frames"] == 40 and run["status"] == "completed"
    # The config written back is an offline one: it reloads without a [collector].
    assert "[collector]" not in (state.run_dir / "config.toml").read_text()


def test_an_offline_run_resumes_from_its_checkpoint(tmp_path):
    data = offline_config(tmp_path, random_dataset("Pendulum-v1"))
    first = train(build_run(validate_data(data)))
    data["data"]["total_steps"] = 80
    resumed = train(build_run(validate_data(data)), resume=first.run_dir)
    assert resumed.status == "completed" and resumed.frames == 80 and resumed.iteration == 4
    assert resumed.episodes == 8  # two evaluations of 2 episodes before, two after


def test_a_checkpoint_with_the_old_gradient_steps_key_resumes_as_a_new_one(tmp_path):
    """Checkpoints written before issue 45 name the offline source's gradient steps "frames"."""
    import shutil

    import torch

    data = offline_config(tmp_path / "run", random_dataset("Pendulum-v1"))
    first = train(build_run(validate_data(data)))
    old = tmp_path / "old"
    shutil.copytree(first.run_dir, old)
    (path,) = (old / "checkpoints").glob("ckpt-*.pt")
    payload = torch.load(path, weights_only=True)
    source = payload["ranks"][0]["collector"]
    assert source["gradient_steps"] == 40 and "frames" not in source
    source["frames"] = source.pop("gradient_steps")
    torch.save(payload, path)
    data["data"]["total_steps"] = 80
    resumed = {folder: train(build_run(validate_data(data)), resume=folder) for folder in (first.run_dir, old)}
    rows = {
        folder: [
            {k: v for k, v in json.loads(line).items() if not k.startswith("time/") and k not in ("wall_time_s", "fps")}
            for line in (folder / "metrics.jsonl").read_text().splitlines()
        ]
        for folder in resumed
    }
    assert resumed[old].run.source.progress == resumed[first.run_dir].run.source.progress == 80
    assert [row["frames"] for row in rows[old]] == [20, 40, 60, 80]
    assert rows[old] == rows[first.run_dir]


@pytest.mark.parametrize(
    ("change", "path", "fragment"),
    [
        ({"collector": {"frames_per_batch": 8}}, "collector", "remove [collector]"),
        ({"algo": {"name": "sac"}}, "data", "the algorithms that learn from a dataset: td3, bc, iql, cql"),
    ],
)
def test_a_source_the_algorithm_does_not_learn_from_is_a_config_error(tmp_path, change, path, fragment):
    data = offline_config(tmp_path, random_dataset("Pendulum-v1")) | change
    with pytest.raises(ConfigError) as info:
        validate_data(data)
    assert fragment in info.value.render() and path in info.value.render()


def test_an_offline_algorithm_without_data_names_the_section(tmp_path):
    data = offline_config(tmp_path, "x")
    del data["data"]
    with pytest.raises(ConfigError, match=r"add a \[data\] section"):
        validate_data(data)


def test_discrete_actions_for_iql_and_a_dataset_of_another_env_are_refused(tmp_path):
    cartpole = random_dataset("CartPole-v1")
    with pytest.raises(ConfigError) as info:
        build_run(validate_data(offline_config(tmp_path, cartpole, env="CartPole-v1")))
    assert "iql does not support" in info.value.render() and "Box" in info.value.render()
    assert "the algorithms that learn from a dataset with such actions: bc" in info.value.render()
    with pytest.raises(ConfigError) as info:
        build_run(validate_data(offline_config(tmp_path, cartpole, env="Pendulum-v1")))
    assert "was collected on CartPole-v1" in info.value.render() and "env.id" in info.value.render()


def test_bc_on_discrete_actions_fits_the_dataset_actions_distribution(tmp_path):
    """Behaviour cloning of uniformly random CartPole actions: a categorical clone's cross-entropy
    reaches the entropy of the data, log 2."""
    cfg = validate_data(
        offline_config(tmp_path, random_dataset("CartPole-v1", episodes=20), algo="bc", env="CartPole-v1")
        | {
            "data": {
                "dataset": random_dataset("CartPole-v1", episodes=20),
                "total_steps": 200,
                "steps_per_iteration": 200,
            }
        }
    )
    state = train(build_run(cfg))
    assert state.status == "completed"
    row = json.loads((state.run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    # Random actions of CartPole: the cross-entropy of a clone falls to log 2, and no lower.
    assert row["loss/actor"] == pytest.approx(np.log(2), abs=0.05)


def test_rlcli_train_reports_an_offline_run_in_gradient_steps_and_its_evaluation(cli, tmp_path):
    dataset = random_dataset("Pendulum-v1")
    config = tmp_path / "iql.toml"
    config.write_text(
        f"""
[run]
output_dir = "{tmp_path.as_posix()}"
[env]
id = "Pendulum-v1"
num_envs = 2
[network]
hidden_sizes = [16, 16]
[algo]
name = "iql"
batch_size = 16
[data]
dataset = "{dataset}"
total_steps = 30
steps_per_iteration = 20
[eval]
episodes = 2
final_episodes = 0
""",
        encoding="utf-8",
    )
    result = cli("train", config)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    # 30 steps round up to 2 iterations of 20; the return column is the evaluation's.
    assert "40 gradient steps from" in out and "total_steps 30 rounded up to 2 whole iterations of 20" in out
    assert "last return (last evaluation)" in out and "eval return (2 episodes at 40 gradient steps)" in out


def test_a_shipped_preset_whose_dataset_is_missing_names_the_command_that_puts_it_there(cli, tmp_path, monkeypatch):
    from rlcli.config.load import load_config
    from rlcli.config.recipes import RECIPES

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "empty"))
    offline = {p.stem: load_config(p).data.dataset for p in sorted(PRESETS.glob("*.toml")) if load_config(p).offline}
    made = {preset: dataset for preset, dataset in offline.items() if dataset in RECIPES}
    assert made and set(made) != set(offline), "presets on datasets rlcli makes, and on hosted ones"
    for preset, dataset in offline.items():
        if MISSING_EXTRAS[PRESETS / f"{preset}.toml"]:
            continue
        result = cli("train", preset, "--out", str(tmp_path / "runs"))
        output = assert_bad_input(result, "data.dataset", f"no dataset {dataset!r}")
        # The hint comes from the recipe table: rlcli's command for its own datasets, minari's for the rest.
        if preset in made:
            assert f"`rlcli datasets make {dataset}` writes it" in output, output
            assert "minari download" not in output
        else:
            assert f"`minari download {dataset}` puts it there" in output and "pip install 'minari[hf]'" in output
    assert not (tmp_path / "runs").exists()


def test_the_medium_pick_is_the_checkpoint_of_the_first_evaluation_at_the_medium_return(tmp_path):
    # A threshold every evaluation reaches: the first evaluation's checkpoint is the pick, and it is kept.
    from rlcli.config.recipes import Training
    from rlcli.datasets.make import train_for

    plan = Training(preset="sac_pendulum", frames=240, every_frames=80, eval_episodes=1, medium_return=-1e9)
    seen = []
    trained = train_for(plan, tmp_path, seed=0, frames=None, medium=True, progress=lambda *a: seen.append(a))
    assert (trained.frames, trained.medium_frames) == (240, 80)
    assert trained.medium == trained.run_dir / "checkpoints" / "ckpt-000000000080.pt" and trained.medium.is_file()
    assert seen[-1] == ("train sac_pendulum", 240, 240) and len(seen) == 30
    # Unreachable: no pick, and the error says so.
    never = Training(preset="sac_pendulum", frames=160, every_frames=80, eval_episodes=1, medium_return=1.0)
    with pytest.raises(InputError, match="no medium policy"):
        train_for(never, tmp_path / "never", seed=0, frames=None, medium=True, progress=None)
