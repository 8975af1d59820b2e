"""``rlcli`` itself: version and help, in this process (``test_startup.py`` runs ``python -m rlcli
--version`` as a real process)."""

from __future__ import annotations

import pytest

from rlcli import __version__


def test_version(cli):
    result = cli("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"rlcli {__version__}"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ((), ["validate", "show-config", "schema"]),
        (("validate",), ["--build", "--json"]),
        (("show-config",), ["--set", "--format"]),
        (("schema",), ["--output"]),
    ],
    ids=["rlcli", "validate", "show-config", "schema"],
)
def test_help(cli, command, expected):
    result = cli(*command, "--help")
    assert result.returncode == 0, result.stderr
    for word in expected:
        assert word in result.stdout
