"""``rlcli bench`` through the real command: quick suite, JSON report, compare and gate."""

import json


def test_quick_advantage_suite_json_round_trips_through_compare(rlcli, tmp_path):
    out = tmp_path / "out.json"
    first = rlcli("bench", "--quick", "--suite", "advantage", "--repeat", "2", "--json", out)
    assert first.returncode == 0, first.stderr
    report = json.loads(out.read_text())
    keys = {row["key"] for row in report["results"]}
    for shape in ("T=512,N=1", "T=512,N=32", "T=2048,N=16", "T=128,N=256"):
        assert f"advantage/gae[{shape}]" in keys
    assert "advantage/gae_speedup[T=2048,N=16]" in keys
    assert report["machine"]["cores"] >= 1 and report["machine"]["torch"]
    assert all(row["median"] > 0 and row["min"] <= row["median"] <= row["max"] for row in report["results"])
    assert "advantage/gae" in first.stdout and "elements/s" in first.stdout

    again = rlcli("bench", "--quick", "--suite", "advantage", "--repeat", "2", "--compare", out)
    assert again.returncode == 0, again.stderr
    assert "baseline" in again.stdout and "change %" in again.stdout

    # A baseline ten times faster than this machine: every rate regressed by ~90%.
    for row in report["results"]:
        if row["unit"] == "elements/s":
            row.update(median=row["median"] * 10, min=row["min"] * 10, max=row["max"] * 10)
    row = dict(report["results"][0], key="advantage/retired[T=1,N=1]")
    report["results"].append(row)
    fast = tmp_path / "fast.json"
    fast.write_text(json.dumps(report))
    gated = rlcli("bench", "--quick", "--suite", "advantage", "--repeat", "2", "--compare", fast,
                  "--max-regression", "20")
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "worse than the baseline by more than 20%" in gated.stderr
    assert "advantage/gae[T=512,N=32]" in gated.stderr
    # A figure only in the baseline is shown, not an error.
    assert "advantage/retired" in gated.stdout
    assert "Traceback" not in gated.stderr


def test_foreign_baseline_and_unknown_suite_are_bad_input(rlcli, tmp_path):
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"benchmarks": []}))
    result = rlcli("bench", "--quick", "--suite", "advantage", "--compare", foreign)
    assert result.returncode == 2
    assert "not an rlcli bench report" in result.stderr and "Traceback" not in result.stderr
    unknown = rlcli("bench", "--suite", "nope")
    assert unknown.returncode == 2
    assert "unknown suite" in unknown.stderr and "advantage" in unknown.stderr
