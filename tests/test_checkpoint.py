import torch

from rlcli import checkpoint


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
