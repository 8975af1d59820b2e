import pytest
import torch

from rlcli.config.errors import InputError
from rlcli.trainer import checkpoint


def test_save_replaces_atomically_and_loads_weights_only(tmp_path):
    path = tmp_path / "final.pt"
    checkpoint.save(path, {"agent": {"w": torch.ones(3)}, "frames": 10})
    checkpoint.save(path, {"agent": {"w": torch.zeros(3)}, "frames": 20})
    loaded = checkpoint.load(path)
    assert loaded["frames"] == 20 and torch.equal(loaded["agent"]["w"], torch.zeros(3))
    # No temporary files are left beside it.
    assert [p.name for p in tmp_path.iterdir()] == ["final.pt"]


def test_write_json(tmp_path):
    path = tmp_path / "run.json"
    checkpoint.write_json(path, {"status": "running"})
    checkpoint.write_json(path, {"status": "completed"})
    assert path.read_text().strip().endswith("}")
    assert '"completed"' in path.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "ckpt.pt"
    checkpoint.save(path, {"frames": 1})

    class Unsaveable:
        def __reduce__(self):
            raise KeyboardInterrupt  # as a second Ctrl-C during the write would

    with pytest.raises(KeyboardInterrupt):
        checkpoint.save(path, {"frames": 2, "bad": Unsaveable()})
    assert checkpoint.load(path)["frames"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]


def test_checkpoints_keep_the_newest_and_ignore_temporaries(tmp_path):
    folder = checkpoint.Checkpoints(tmp_path, keep_last=2)
    for frames in (100, 2000, 300, 40):
        folder.save({"frames": frames}, frames)
    # Ordered by frames, not by name or time: the two of most frames are kept.
    assert [p.name for p in folder.paths()] == ["ckpt-000000000300.pt", "ckpt-000000002000.pt"]
    (folder.folder / ".ckpt-000000009999.pt.abc").write_bytes(b"cut short")
    assert folder.latest().name.startswith("ckpt-") and ".ckpt" not in folder.latest().name
    folder.clean_temporaries()
    assert not list(folder.folder.glob(".*"))


def test_read_names_what_is_wrong(tmp_path):
    with pytest.raises(checkpoint.CheckpointError, match="no such file"):
        checkpoint.read(tmp_path / "missing.pt")
    path = tmp_path / "other.pt"
    torch.save({"weights": torch.ones(2)}, path)
    with pytest.raises(checkpoint.CheckpointError, match="not an rlcli checkpoint"):
        checkpoint.read(path)
    torch.save({"format": 99, "agent": {}}, path)
    with pytest.raises(checkpoint.CheckpointError, match="format 99"):
        checkpoint.read(path)
    path.write_bytes(b"not a zip at all")
    with pytest.raises(checkpoint.CheckpointError, match="truncated or corrupt"):
        checkpoint.read(path)


def test_restore_agent_names_each_tensor_that_differs():
    small, large = torch.nn.Linear(3, 4), torch.nn.Linear(3, 8)
    with pytest.raises(checkpoint.CheckpointError) as info:
        checkpoint.restore_agent(small, large.state_dict(), what="checkpoint x")
    assert "weight is [8, 3] in the checkpoint but [4, 3]" in str(info.value)
    with pytest.raises(checkpoint.CheckpointError, match="missing from the checkpoint"):
        checkpoint.restore_agent(small, {"weight": small.weight.detach()}, what="checkpoint x")
    other = torch.nn.Linear(3, 4)
    checkpoint.restore_agent(small, other.state_dict(), what="checkpoint x")
    assert torch.equal(small.weight, other.weight)


def test_rng_state_round_trips_through_a_weights_only_file(tmp_path):
    import random

    import numpy as np

    state = checkpoint.rng_state()
    expected = (torch.rand(3), np.random.rand(3), random.random())
    checkpoint.save(tmp_path / "rng.pt", {"rng": state})
    checkpoint.set_rng_state(checkpoint.load(tmp_path / "rng.pt")["rng"])
    again = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(expected[0], again[0]) and np.array_equal(expected[1], again[1]) and expected[2] == again[2]


def test_resume_config_problems_allow_only_budget_logging_and_timing():
    from rlcli.config.load import load_config
    from rlcli.config.presets import find_preset

    saved = load_config(find_preset("ppo_cartpole"))
    allowed = load_config(
        find_preset("ppo_cartpole"), ["collector.total_frames=999999", "logger.interval=5", "timing.enabled=false"]
    )
    assert checkpoint.resume_config_problems(saved, allowed) == []
    changed = load_config(find_preset("ppo_cartpole"), ["algo.gamma=0.5", "run.seed=3"])
    problems = checkpoint.resume_config_problems(saved, changed)
    assert len(problems) == 2 and problems[0].startswith("run.seed (0 in the run, 3 now)")
    assert any(p.startswith("algo.gamma") for p in problems)


def test_a_run_folder_gives_the_newer_of_final_pt_and_its_newest_checkpoint(tmp_path):
    (tmp_path / "config.toml").write_text("")
    (tmp_path / "checkpoints").mkdir()
    for frames in (512, 10240, 2048):
        (tmp_path / "checkpoints" / f"ckpt-{frames:012d}.pt").write_bytes(b"")
    (tmp_path / "checkpoints" / ".ckpt-000000099999.pt.tmp").write_bytes(b"")
    newest = tmp_path / "checkpoints" / "ckpt-000000010240.pt"
    assert checkpoint.find_checkpoint(tmp_path) == (tmp_path, newest)
    # final.pt of a run stopped at 4096 frames, then resumed and killed at 10240: the checkpoint is newer.
    torch.save({"format": 1, "agent": {}, "frames": 4096}, tmp_path / "final.pt")
    assert checkpoint.find_checkpoint(tmp_path) == (tmp_path, newest)
    torch.save({"format": 1, "agent": {}, "frames": 10240}, tmp_path / "final.pt")
    assert checkpoint.find_checkpoint(tmp_path) == (tmp_path, tmp_path / "final.pt")
    assert checkpoint.find_checkpoint(tmp_path / "final.pt") == (tmp_path, tmp_path / "final.pt")


@pytest.mark.parametrize("layout", ["missing", "no config", "no weights", "stray file"])
def test_paths_that_are_no_run_are_input_errors(tmp_path, layout):
    if layout == "missing":
        path, expected = tmp_path / "nothing", "no such file or folder"
    elif layout == "no config":
        path, expected = tmp_path, "not a run folder: there is no config.toml in it"
    elif layout == "no weights":
        (tmp_path / "config.toml").write_text("")
        path, expected = tmp_path, "no final.pt and no checkpoints/ckpt-*.pt"
    else:
        path = tmp_path / "a" / "b" / "weights.pt"
        path.parent.mkdir(parents=True)
        path.write_bytes(b"")
        expected = "no config.toml beside it or in the two folders above"
    with pytest.raises(InputError) as info:
        checkpoint.find_checkpoint(path)
    assert expected in info.value.render()
