"""``config/errors.py``: how an issue names its file, line and field."""

from __future__ import annotations

from rlcli.config.errors import ConfigError, ConfigIssue, single


def test_issue_with_field_and_line():
    issue = ConfigIssue("too big", path="algo.gamma", source="bad.toml", line=7)
    assert issue.render() == "algo.gamma: too big  [bad.toml:7]"


def test_issue_without_field_puts_the_location_first():
    issue = ConfigIssue("TOML syntax error: oops", source="bad.toml", line=3, column=14)
    assert issue.render() == "bad.toml:3:14: TOML syntax error: oops"
    assert ConfigIssue("file not found").render() == "file not found"


def test_issue_from_an_override():
    issue = ConfigIssue("too big", path="algo.gamma", source="--set algo.gamma=2")
    assert issue.render() == "algo.gamma: too big  [--set algo.gamma=2]"


def test_error_lists_every_issue_under_the_file():
    error = ConfigError("bad.toml", [ConfigIssue("a", path="x"), ConfigIssue("b", path="y", source="bad.toml", line=2)])
    assert error.render() == "invalid config bad.toml\n  x: a\n  y: b  [bad.toml:2]"
    assert str(error) == error.render()
    assert error.to_json() == {
        "file": "bad.toml",
        "errors": [
            {"path": "x", "message": "a", "source": None, "line": None, "column": None},
            {"path": "y", "message": "b", "source": "bad.toml", "line": 2, "column": None},
        ],
    }


def test_single_repeats_the_file_only_to_anchor_a_line():
    assert single("bad.toml", "file not found").issues == [ConfigIssue("file not found")]
    (issue,) = single("bad.toml", "oops", line=3, column=1).issues
    assert (issue.source, issue.line, issue.column) == ("bad.toml", 3, 1)
    (issue,) = single(None, "oops", source="--set x", path="x").issues
    assert (issue.source, issue.path) == ("--set x", "x")
