"""``config/messages.py``: the line of each key in a TOML file, which error messages point at."""

from __future__ import annotations

from rlcli.config.messages import key_lines


def test_key_lines(tmp_path):
    path = tmp_path / "lines.toml"
    path.write_text(
        "\n".join(
            [
                "# comment",  # 1
                'extends = "base.toml"',  # 2
                "",  # 3
                "[env]   # trailing comment",  # 4
                'id = "CartPole-v1"',  # 5
                '"quoted-key" = 2',  # 6
                "  indented = 3",  # 7
                "kwargs.g = 9.8",  # 8
                "",  # 9
                "[ algo ]",  # 10
                'name = "ppo"',  # 11
                "[env.kwargs]",  # 12
                "render_mode = 1",  # 13
                "[algo]",  # 14
                "gamma = 0.5",  # 15
            ]
        ),
        encoding="utf-8",
    )
    assert key_lines(path) == {
        "extends": 2,
        "env": 4,
        "env.id": 5,
        "env.quoted-key": 6,
        "env.indented": 7,
        "env.kwargs.g": 8,
        "env.kwargs": 12,
        "algo": 10,
        "algo.name": 11,
        "env.kwargs.render_mode": 13,
        "algo.gamma": 15,
    }


def test_key_lines_of_unreadable_file_is_empty(tmp_path):
    assert key_lines(tmp_path / "missing.toml") == {}
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe[env]\n")
    assert key_lines(tmp_path / "binary.toml") == {}
