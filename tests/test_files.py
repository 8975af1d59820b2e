"""write_atomic and replacing: permissions from the umask as open() gives them, the target replaced
whole, and a failed writer leaving the old file and no temporary."""

import os
import stat

import pytest

from rlcli.files import replacing, write_atomic


@pytest.fixture
def umask():
    """Set the process umask for one test, restoring the old one after."""
    before = os.umask(0o022)
    os.umask(before)
    yield lambda mask: os.umask(mask)
    os.umask(before)


@pytest.mark.skipif(os.name != "posix", reason="permission bits are POSIX")
@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_permissions_follow_the_umask_as_open_gives_them(tmp_path, umask, mask):
    umask(mask)
    plain = tmp_path / "plain.txt"
    with plain.open("w") as file:
        file.write("x")
    write_atomic(tmp_path / "atomic.txt", "x")
    with replacing(tmp_path / "by_path.bin") as temporary:
        temporary.write_bytes(b"x")
    expected = stat.S_IMODE(plain.stat().st_mode)
    assert expected == 0o666 & ~mask
    assert stat.S_IMODE((tmp_path / "atomic.txt").stat().st_mode) == expected
    assert stat.S_IMODE((tmp_path / "by_path.bin").stat().st_mode) == expected


def test_each_shape_replaces_an_existing_file(tmp_path):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old contents, longer than the new")
    write_atomic(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    # Text is UTF-8, its newlines untranslated on every platform.
    write_atomic(path, "é\n")
    assert path.read_bytes() == "é\n".encode()
    write_atomic(path, lambda file: file.write(b"from a callback"))
    assert path.read_bytes() == b"from a callback"
    with replacing(path) as temporary:
        assert temporary.parent == path.parent and temporary.suffix == ".bin"
        temporary.write_bytes(b"by path")
    assert path.read_bytes() == b"by path"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_writer_leaves_the_target_and_no_temporary(tmp_path, error):
    path = tmp_path / "run.json"
    path.write_text("old")

    def failing(file):
        file.write(b"half of the new")
        raise error

    with pytest.raises(type(error)):
        write_atomic(path, failing)
    with pytest.raises(type(error)):
        with replacing(path) as temporary:
            temporary.write_bytes(b"half")
            raise error
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_a_missing_target_is_created_and_a_missing_folder_is_an_error(tmp_path):
    write_atomic(tmp_path / "new.txt", "new")
    assert (tmp_path / "new.txt").read_text() == "new"
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "no" / "such" / "folder.txt", "x")
    assert [p.name for p in tmp_path.iterdir()] == ["new.txt"]
