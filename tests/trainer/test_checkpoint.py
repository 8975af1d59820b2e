import pytest
import torch

from rlcli.trainer import checkpoint


def test_save_replaces_atomically_and_loads_weights_only(tmp_path):
    path = tmp_path / "final.pt"
    checkpoint.save(path, {"agent": {"w": torch.ones(3)}, "frames": 10})
    checkpoint.save(path, {"agent": {"w": torch.zeros(3)}, "frames": 20})
    loaded = checkpoint.load(path)
    assert loaded["frames"] == 20 and torch.equal(loaded["agent"]["w"], torch.zeros(3))
    # No temporary files are left beside it.
    assert [p.name for p in tmp_path.iterdir()] == ["final.pt"]


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
