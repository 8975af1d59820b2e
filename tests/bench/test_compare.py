import json

import pytest

from rlcli.bench.compare import FORMAT, compare, load_report, regressions
from rlcli.config.errors import ConfigError


def report(*rows):
    return {
        "format": FORMAT,
        "results": [
            {"key": key, "unit": unit, "median": median, "min": low, "max": high}
            for key, unit, median, low, high in rows
        ],
    }


def by_key(rows):
    return {row.key: row for row in rows}


def test_direction_follows_the_unit():
    baseline = report(("a", "frames/s", 100, 95, 105), ("b", "ms", 10, 9.5, 10.5), ("c", "slowdown", 1.0, 1.0, 1.0))
    current = report(("a", "frames/s", 150, 145, 155), ("b", "ms", 15, 14.5, 15.5), ("c", "slowdown", 0.8, 0.8, 0.8))
    rows = by_key(compare(current, baseline))
    assert rows["a"].change_pct == pytest.approx(50.0) and rows["a"].verdict == "better"
    # Time going up is worse even though the number grew.
    assert rows["b"].change_pct == pytest.approx(-50.0) and rows["b"].verdict == "worse"
    assert rows["c"].change_pct == pytest.approx(20.0) and rows["c"].verdict == "better"


def test_changes_within_noise_or_overlapping_spreads_are_the_same():
    baseline = report(("small", "calls/s", 100, 99, 101), ("wide", "calls/s", 100, 60, 140))
    current = report(("small", "calls/s", 103, 102, 104), ("wide", "calls/s", 120, 90, 150))
    rows = by_key(compare(current, baseline, noise_pct=5))
    assert rows["small"].verdict == "same"
    assert rows["wide"].verdict == "same" and rows["wide"].change_pct == pytest.approx(20.0)


def test_figures_on_one_side_only_are_listed_not_errors():
    rows = by_key(compare(report(("new", "calls/s", 1, 1, 1)), report(("old", "calls/s", 2, 2, 2))))
    assert rows["new"].verdict == "only here" and rows["new"].baseline is None
    assert rows["old"].verdict == "only in baseline" and rows["old"].current is None
    assert regressions(list(rows.values()), 0) == []


def test_regression_threshold():
    baseline = report(("a", "frames/s", 100, 100, 100), ("b", "frames/s", 100, 100, 100))
    current = report(("a", "frames/s", 89, 89, 89), ("b", "frames/s", 95, 95, 95))
    worse = regressions(compare(current, baseline), 10)
    assert [row.key for row in worse] == ["a"]
    assert regressions(compare(current, baseline), 12) == []


@pytest.mark.parametrize(
    "content,message",
    [
        ("not json", "not a JSON file"),
        ('{"results": []}', "not an rlcli bench report"),
        ("[1, 2]", "not an rlcli bench report"),
        (json.dumps({"format": FORMAT, "results": [{"key": "a", "median": "fast", "unit": "calls/s"}]}), "results[0]"),
        (json.dumps({"format": FORMAT, "results": [{"key": "a", "median": 1, "unit": "parsecs"}]}), "results[0]"),
    ],
)
def test_malformed_or_foreign_reports_are_config_errors(tmp_path, content, message):
    path = tmp_path / "baseline.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as info:
        load_report(path)
    assert message in info.value.render()


def test_missing_report_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_report(tmp_path / "nope.json")


def test_a_baseline_from_before_the_contrib_suite_moved_compares_figure_by_figure():
    # Keys as `rlcli bench --json` wrote them before issue 45, and as it writes them now.
    baseline = report(
        ("contrib/qrdqn.update[preset=qrdqn_cartpole,batch=64]", "calls/s", 100, 99, 101),
        ("contrib/trpo.update.slowdown_vs_bare_torch[preset=trpo_pendulum,rows=2048]", "slowdown", 2.0, 2.0, 2.0),
        ("contrib/redq.update_5_critics[critics=5,hidden=256x256,batch=256]", "calls/s", 50, 50, 50),
        ("offpolicy/sac.update[batch=256,hidden=256x256,critics=2]", "calls/s", 80, 80, 80),
    )
    current = report(
        ("offpolicy/qrdqn.update[preset=qrdqn_cartpole,batch=64]", "calls/s", 150, 149, 151),
        ("onpolicy/trpo.update.slowdown_vs_bare_torch[preset=trpo_pendulum,rows=2048]", "slowdown", 2.0, 2.0, 2.0),
        ("offpolicy/redq.update_5_critics[critics=5,hidden=256x256,batch=256]", "calls/s", 50, 50, 50),
        ("offpolicy/sac.update[batch=256,hidden=256x256,critics=2]", "calls/s", 80, 80, 80),
    )
    rows = compare(current, baseline)
    assert len(rows) == 4 and all(row.baseline is not None and row.current is not None for row in rows)
    moved = by_key(rows)["offpolicy/qrdqn.update[preset=qrdqn_cartpole,batch=64]"]
    assert moved.verdict == "better" and moved.change_pct == pytest.approx(50.0)
    assert by_key(rows)["onpolicy/trpo.update.slowdown_vs_bare_torch[preset=trpo_pendulum,rows=2048]"].verdict == "same"
