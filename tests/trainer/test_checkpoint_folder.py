import pytest
import torch

from rlcli.config.errors import InputError
from rlcli.trainer.checkpoint_folder import Checkpoints, find_checkpoint


def test_checkpoints_keep_the_newest_and_ignore_temporaries(tmp_path):
    folder = Checkpoints(tmp_path, keep_last=2)
    for frames in (100, 2000, 300, 40):
        folder.save({"frames": frames}, frames)
    # Ordered by frames, not by name or time: the two of most frames are kept.
    assert [p.name for p in folder.paths()] == ["ckpt-000000000300.pt", "ckpt-000000002000.pt"]
    (folder.folder / ".ckpt-000000009999.pt.abc").write_bytes(b"cut short")
    assert folder.latest().name.startswith("ckpt-") and ".ckpt" not in folder.latest().name
    folder.clean_temporaries()
    assert not list(folder.folder.glob(".*"))


def test_a_run_folder_gives_the_newer_of_final_pt_and_its_newest_checkpoint(tmp_path):
    (tmp_path / "config.toml").write_text("")
    (tmp_path / "checkpoints").mkdir()
    for frames in (512, 10240, 2048):
        (tmp_path / "checkpoints" / f"ckpt-{frames:012d}.pt").write_bytes(b"")
    (tmp_path / "checkpoints" / ".ckpt-000000099999.pt.tmp").write_bytes(b"")
    newest = tmp_path / "checkpoints" / "ckpt-000000010240.pt"
    assert find_checkpoint(tmp_path) == (tmp_path, newest)
    # final.pt of a run stopped at 4096 frames, then resumed and killed at 10240: the checkpoint is newer.
    torch.save({"format": 1, "agent": {}, "frames": 4096}, tmp_path / "final.pt")
    assert find_checkpoint(tmp_path) == (tmp_path, newest)
    torch.save({"format": 1, "agent": {}, "frames": 10240}, tmp_path / "final.pt")
    assert find_checkpoint(tmp_path) == (tmp_path, tmp_path / "final.pt")
    assert find_checkpoint(tmp_path / "final.pt") == (tmp_path, tmp_path / "final.pt")


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
        find_checkpoint(path)
    assert expected in info.value.render()
