"""``rlcli bench``: the quick advantage suite, its JSON report, compare and gate, and bad input in
this process (Typer's runner); integration: a stop signal to the real command at each stage."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.cli import rlcli_executable, sigint_default


@pytest.fixture
def torch_threads():
    """Restore torch's thread count, which the bench sets (``--threads``, 1 by default) for this process."""
    import torch

    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_quick_advantage_suite_json_round_trips_through_compare(cli, tmp_path, torch_threads):
    out = tmp_path / "out.json"
    first = cli("bench", "--quick", "--suite", "advantage", "--repeat", "2", "--json", out)
    assert first.returncode == 0, first.stderr
    report = json.loads(out.read_text())
    keys = {row["key"] for row in report["results"]}
    for shape in ("T=512,N=1", "T=512,N=32", "T=2048,N=16", "T=128,N=256"):
        assert f"advantage/gae[{shape}]" in keys
    assert "advantage/gae_speedup[T=2048,N=16]" in keys
    assert report["machine"]["cores"] >= 1 and report["machine"]["torch"]
    assert all(row["median"] > 0 and row["min"] <= row["median"] <= row["max"] for row in report["results"])
    assert "advantage/gae" in first.stdout and "elements/s" in first.stdout

    again = cli("bench", "--quick", "--suite", "advantage", "--repeat", "2", "--compare", out)
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
    gated = cli(
        "bench", "--quick", "--suite", "advantage", "--repeat", "2", "--compare", fast, "--max-regression", "20"
    )
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "worse than the baseline by more than 20%" in gated.stderr
    assert "advantage/gae[T=512,N=32]" in gated.stderr
    # A figure only in the baseline is shown, not an error.
    assert "advantage/retired" in gated.stdout
    assert "Traceback" not in gated.stderr


def test_foreign_baseline_and_unknown_suite_are_bad_input(cli, tmp_path):
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"benchmarks": []}))
    result = cli("bench", "--quick", "--suite", "advantage", "--compare", foreign)
    assert result.returncode == 2
    assert "not an rlcli bench report" in result.stderr and "Traceback" not in result.stderr
    unknown = cli("bench", "--suite", "nope")
    assert unknown.returncode == 2
    assert "unknown suite" in unknown.stderr and "advantage" in unknown.stderr


def test_the_old_contrib_suite_names_the_suites_its_figures_moved_to(cli):
    moved = cli("bench", "--suite", "advantage", "--suite", "contrib")
    assert moved.returncode == 2 and "Traceback" not in moved.stderr
    text = " ".join(moved.stderr.split())
    assert "--suite contrib" in text and "onpolicy: trpo; offpolicy: qrdqn, tqc, crossq, redq" in text
    assert "run --suite onpolicy --suite offpolicy" in text


def _bench_stopped(tmp_path, args, sig, *, when_exists=None, after=0.0):
    """Start ``rlcli bench ARGS --json`` with its own temp dir, send ``sig`` once it reached ``when_exists``
    (see :func:`_reached`) and ``after`` more seconds passed; returns the exit, its stderr, the seconds from the signal to the exit, and what the temp
    dir and the --json path hold afterwards."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "out.json"
    env = {**os.environ, "TMPDIR": str(tmp), "COLUMNS": "400", "NO_COLOR": "1"}
    bench = subprocess.Popen(
        [rlcli_executable(), "bench", *args, "--json", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    started = time.monotonic()
    while when_exists and not _reached(when_exists, bench.pid, tmp):
        assert bench.poll() is None, bench.communicate()
        assert time.monotonic() - started < 120, f"{when_exists} never appeared in {tmp}"
        time.sleep(0.05)
    time.sleep(after)
    assert bench.poll() is None, "the bench ended before the signal"
    sent = time.monotonic()
    bench.send_signal(sig)
    _, stderr = bench.communicate(timeout=60)
    left = sorted(p.name for p in tmp.iterdir() if p.name.startswith("rlcli-bench"))
    return bench.returncode, stderr, time.monotonic() - sent, left, out.exists()


@pytest.mark.integration
@pytest.mark.parametrize(
    "sig, args, when_exists, after",
    [
        # During start-up: torch's import (held to its end) or the imports after it. Not before torch's
        # library is mapped: until rlcli's main() has run, a SIGTERM has its default action (a loaded
        # machine once took more than the 0.4 s this test used to wait to get there).
        (signal.SIGTERM, ["--suite", "advantage"], "torch", 0.0),
        (signal.SIGINT, ["--suite", "advantage"], "torch", 0.8),
        # Inside a train case: the trainer's own handler must not turn it into the end of that run alone.
        (signal.SIGINT, ["--quick", "--suite", "train"], "rlcli-bench-*/train/*/metrics.csv", 0.3),
        (signal.SIGTERM, ["--quick", "--suite", "train"], "rlcli-bench-*/train/*/metrics.csv", 0.3),
        # Between and inside the cases of a suite with async envs (forked workers inherit the handlers).
        (signal.SIGINT, ["--suite", "env"], "rlcli-bench-*", 4.0),
        # With the distributed suite's partner process joined.
        (signal.SIGTERM, ["--suite", "distributed"], "partner", 0.5),
    ],
)
def test_a_stop_signal_ends_the_bench_at_once_with_nothing_left(tmp_path, sig, args, when_exists, after):
    code, stderr, seconds, left, wrote = _bench_stopped(tmp_path, args, sig, when_exists=when_exists, after=after)
    assert code == (143 if sig == signal.SIGTERM else 130), stderr
    assert "Traceback" not in stderr and "Fatal" not in stderr, stderr
    # The bar is 2 s on an idle machine; a loaded test machine gets slack.
    assert seconds < 5, f"{seconds:.1f} s from the signal to the exit"
    assert not wrote, "a stopped bench wrote a report"
    assert left == [], f"left in the temp dir: {left}"
    assert _partners() == [], "the partner process outlived the bench"


def _reached(what: str, pid: int, tmp: Path) -> bool:
    """Whether the bench got to ``what``: "torch" (its import has mapped torch's library), "partner"
    (the distributed suite's partner runs), else a glob under ``tmp`` that matches."""
    if what == "torch":
        try:
            return b"libtorch" in (Path("/proc") / str(pid) / "maps").read_bytes()
        except OSError:
            return False
    return bool(_partners() if what == "partner" else list(tmp.glob(what)))


def _partners() -> list[Path]:
    """The processes of the distributed suite's partner rank on this machine."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and b"rlcli.bench.partner" in (proc / "cmdline").read_bytes():
                found.append(proc)
        except OSError:
            pass
    return found
