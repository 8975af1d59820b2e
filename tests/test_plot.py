"""``rlcli.plot``: reading run folders, grouping seeds, the median and its bands, the timing bars."""

from __future__ import annotations

import json
import math
import random
import statistics
import sys
from pathlib import Path

import numpy as np
import pytest

from rlcli.config.errors import InputError
from rlcli.plot import (
    DPI,
    FIGSIZE_IN,
    LEGEND_ROW_IN,
    RETURN,
    Group,
    expand_run_dirs,
    figure_size,
    group_curve,
    group_runs,
    mean_phase_ms,
    plot_runs,
    read_metrics,
    read_run,
    y_label,
)
from support.images import png_size
from support.presets import require_extra

COLUMNS = [
    "iteration",
    "frames",
    "wall_time_s",
    "fps",
    RETURN,
    "rollout/episode_length_mean",
    "rollout/episodes",
    "loss/policy",
    "time/collect_ms",
    "time/update_ms",
    "time/iteration_ms",
]
TIMING = {
    "collect": {"mean_ms": 6.0, "total_s": 0.6, "share": 0.2},
    "collect.env_step": {"mean_ms": 2.0, "total_s": 0.2, "share": 0.07},
    "update": {"mean_ms": 20.0, "total_s": 2.0, "share": 0.7},
    "update.backward": {"mean_ms": 8.0, "total_s": 0.8, "share": 0.3},
    "log": {"mean_ms": 1.0, "total_s": 0.1, "share": 0.03},
    "iteration": {"mean_ms": 30.0, "total_s": 3.0, "share": 1.0},
}


def cell(value: float) -> str:
    return "" if math.isnan(value) else repr(value)


def write_run(
    folder: Path,
    *,
    name: str = "ppo_cartpole",
    seed: int = 0,
    algo: str = "ppo",
    env: str = "CartPole-v1",
    frames: list[float] | None = None,
    returns: list[float] | None = None,
    times: list[float] | None = None,
    timing: dict | None = None,
    tail: str = "",
) -> Path:
    """A run folder as ``rlcli train`` leaves it: config.toml, metrics.csv (``tail`` appended) and run.json."""
    frames = frames if frames is not None else [512.0 * (i + 1) for i in range(5)]
    returns = returns if returns is not None else [10.0 + i for i in range(len(frames))]
    times = times if times is not None else [0.05 * (i + 1) for i in range(len(frames))]
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(
        f'[run]\nname = "{name}"\nseed = {seed}\nreturn_window = 100\n\n[env]\nid = "{env}"\n\n'
        f'[algo]\nname = "{algo}"\n',
        encoding="utf-8",
    )
    lines = [",".join(COLUMNS)]
    for i, (f, r, t) in enumerate(zip(frames, returns, times)):
        lines.append(
            ",".join([str(i + 1), cell(f), cell(t), "1000.0", cell(r), "20.0", "3", "", "6.0", "20.0", "30.0"])
        )
    (folder / "metrics.csv").write_text("\n".join(lines) + "\n" + tail, encoding="utf-8")
    (folder / "run.json").write_text(
        json.dumps(
            {
                "status": "completed",
                "algo": algo,
                "env": env,
                "seed": seed,
                "timing": TIMING if timing is None else timing,
            }
        ),
        encoding="utf-8",
    )
    return folder


def seeds_group(parent: Path, name: str, seeds: list[int], **kwargs) -> Path:
    """A ``--seeds`` group folder: seeds.json beside one ``<name>-seed<N>-<stamp>`` folder per seed."""
    group = parent / f"{name}-20260101-000000-seeds"
    group.mkdir(parents=True)
    (group / "seeds.json").write_text("{}", encoding="utf-8")
    for seed in seeds:
        write_run(group / f"{name}-seed{seed}-20260101-00000{seed}", name=f"{name}-seed{seed}", seed=seed, **kwargs)
        (group / f"seed-{seed}.log").write_text("", encoding="utf-8")
    return group


def interpolate(xs: list[float], ys: list[float], at: float) -> float:
    """Linear interpolation written out: the value of the polyline (xs, ys) at ``at``."""
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if x0 <= at <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (at - x0) / (x1 - x0)
    raise AssertionError(f"{at} outside {xs[0]}..{xs[-1]}")


def test_metrics_empty_cells_are_nan_and_a_row_that_does_not_parse_is_left_out(tmp_path):
    run = write_run(
        tmp_path / "run",
        returns=[math.nan, 11.0, 12.0, 13.0, 14.0],
        tail="6,3072,0.3,1000.0,15.0,20.0,3,,6.0,20.0,30.0\n"
        "7,garbled,0.35,1000.0,16.0,20.0,3,,6.0,20.0,30.0\n"
        "8,4096,0.4,10",
    )
    header, values = read_metrics(run / "metrics.csv")
    assert header == tuple(COLUMNS)
    # Row 7 has a word in it and row 8 was cut off by a kill.
    assert values["iteration"].tolist() == [1, 2, 3, 4, 5, 6]
    assert math.isnan(values[RETURN][0]) and values[RETURN][1:].tolist() == [11.0, 12.0, 13.0, 14.0, 15.0]
    assert np.isnan(values["loss/policy"]).all()
    assert read_run(run).series("frames", RETURN)[0].tolist() == [1024.0, 1536.0, 2048.0, 2560.0, 3072.0]


def test_nan_written_out_is_no_value_yet(tmp_path):
    run = write_run(tmp_path / "run")
    path = run / "metrics.csv"
    path.write_text(path.read_text(encoding="utf-8").replace(",10.0,20.0,", ",nan,20.0,", 1), encoding="utf-8")
    xs, ys = read_run(run).series("frames", RETURN)
    assert xs.tolist() == [1024.0, 1536.0, 2048.0, 2560.0] and ys.tolist() == [11.0, 12.0, 13.0, 14.0]


def test_a_run_folder_is_itself_and_a_folder_of_them_opens_one_level_and_seeds_groups_one_more(tmp_path):
    out = tmp_path / "runs"
    single = write_run(out / "ppo_cartpole-20260101-120000")
    group = seeds_group(out, "ppo_cartpole", [1, 0])
    (out / "notes").mkdir()
    (out / "notes" / "deeper").mkdir()
    write_run(out / "notes" / "deeper" / "run")
    (out / "readme.txt").write_text("", encoding="utf-8")
    seeds = sorted(p for p in group.iterdir() if p.is_dir())
    assert expand_run_dirs([single]) == [single]
    assert expand_run_dirs([group]) == seeds
    assert expand_run_dirs([out]) == [*seeds, single]
    # Named twice (itself and through its folder): drawn once.
    assert expand_run_dirs([single, out]) == [single, *seeds]


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda root: root / "missing", "does not exist"),
        (lambda root: (root / "file.csv", (root / "file.csv").write_text("", encoding="utf-8"))[0], "is not a folder"),
        (lambda root: (root / "empty", (root / "empty").mkdir())[0], "holds no metrics.csv"),
    ],
    ids=["missing", "file", "no-runs"],
)
def test_a_path_that_is_not_a_run_is_an_input_error_naming_it(tmp_path, make, fragment):
    path = make(tmp_path)
    with pytest.raises(InputError) as caught:
        expand_run_dirs([path])
    assert f"RUN_DIR {path}: {fragment}" in caught.value.render()


def test_a_run_folder_without_config_is_named(tmp_path):
    run = write_run(tmp_path / "run")
    (run / "config.toml").unlink()
    with pytest.raises(InputError, match="no config.toml"):
        read_run(run)


def test_seeds_of_one_call_are_one_group_and_other_experiments_are_apart(tmp_path):
    out = tmp_path / "runs"
    seeds_group(out, "ppo_cartpole", [0, 1, 2])
    write_run(out / "ppo_cartpole-a", seed=5)
    write_run(out / "ppo_cartpole-b", seed=6)
    write_run(out / "ppo_pendulum-a", name="ppo_pendulum", env="Pendulum-v1", seed=0)
    write_run(out / "other-a", name="ppo_cartpole", algo="a2c", seed=0)
    groups = group_runs([read_run(p) for p in expand_run_dirs([out])])
    # In order of the sorted folders: other-a, the seeds group folder, ppo_cartpole-a and -b, ppo_pendulum-a.
    assert [(g.label, len(g.runs)) for g in groups] == [
        ("ppo_cartpole (a2c on CartPole-v1), seed 0", 1),
        ("ppo_cartpole (ppo on CartPole-v1), median of 3 seeds", 3),
        ("ppo_cartpole (ppo on CartPole-v1), median of 2 seeds", 2),
        ("ppo_pendulum (ppo on Pendulum-v1), seed 0", 1),
    ]
    assert [r.seed for r in groups[1].runs] == [0, 1, 2]


def test_equal_labels_get_their_folder_name(tmp_path):
    first = seeds_group(tmp_path / "a", "ppo_cartpole", [0])
    second = seeds_group(tmp_path / "b", "ppo_cartpole", [0])
    groups = group_runs([read_run(p) for p in expand_run_dirs([first, second])])
    assert len(groups) == 2
    assert groups[0].label.endswith(f"seed 0 [{first.name}]")
    assert groups[1].label.endswith(f"seed 0 [{second.name}]")


def test_one_run_is_drawn_as_logged(tmp_path):
    run = read_run(write_run(tmp_path / "run", returns=[math.nan, 3.0, 1.0, 4.0, 1.0]))
    curve = group_curve(Group("x", "x", (run,)), "frames", RETURN)
    assert curve.x.tolist() == [1024.0, 1536.0, 2048.0, 2560.0] and curve.median.tolist() == [3.0, 1.0, 4.0, 1.0]
    assert curve.low is None and curve.high is None


@pytest.mark.parametrize("band", ["minmax", "iqr"])
def test_median_and_band_on_the_frames_grid_match_a_plain_computation(tmp_path, band):
    rng = random.Random(0)
    returns = [[rng.uniform(0, 500) for _ in range(8)] for _ in range(3)]
    frames = [512.0 * (i + 1) for i in range(8)]
    runs = tuple(
        read_run(write_run(tmp_path / f"seed{s}", seed=s, frames=frames, returns=returns[s])) for s in range(3)
    )
    curve = group_curve(Group("x", "x", runs), "frames", RETURN, band)
    assert curve.x.tolist() == frames
    for index in range(len(frames)):
        values = [returns[s][index] for s in range(3)]
        low, high = (
            (min(values), max(values))
            if band == "minmax"
            else statistics.quantiles(values, n=4, method="inclusive")[::2]
        )
        assert curve.median[index] == pytest.approx(statistics.median(values))
        assert (curve.low[index], curve.high[index]) == pytest.approx((low, high))


def test_runs_on_different_x_grids_are_interpolated_inside_their_own_range_only(tmp_path):
    rng = random.Random(1)
    times = [sorted(rng.uniform(0, 10) for _ in range(12)) for _ in range(4)]
    returns = [[rng.uniform(0, 500) for _ in range(12)] for _ in range(4)]
    runs = tuple(
        read_run(
            write_run(
                tmp_path / f"seed{s}",
                seed=s,
                frames=[512.0 * (i + 1) for i in range(12)],
                times=times[s],
                returns=returns[s],
            )
        )
        for s in range(4)
    )
    curve = group_curve(Group("x", "x", runs), "wall_time_s", RETURN, "iqr")
    grid = sorted({t for ts in times for t in ts})
    assert curve.x.tolist() == pytest.approx(grid)
    for index, at in enumerate(grid):
        # Never extrapolated: a run counts only between its own first and last point.
        values = [interpolate(times[s], returns[s], at) for s in range(4) if times[s][0] <= at <= times[s][-1]]
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
        assert curve.median[index] == pytest.approx(statistics.median(values))
        assert (curve.low[index], curve.high[index]) == pytest.approx((q1, q3))


def test_a_run_that_stopped_early_or_started_late_leaves_those_points_to_the_others(tmp_path):
    frames = [512.0 * (i + 1) for i in range(6)]
    full = read_run(write_run(tmp_path / "a", frames=frames, returns=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
    late = read_run(write_run(tmp_path / "b", seed=1, frames=frames, returns=[math.nan, 4.0, 5.0, 6.0, 7.0, 8.0]))
    killed = read_run(write_run(tmp_path / "c", seed=2, frames=frames[:3], returns=[3.0, 6.0, 9.0]))
    curve = group_curve(Group("x", "x", (full, late, killed)), "frames", RETURN)
    assert curve.x.tolist() == frames
    assert curve.median.tolist() == [2.0, 4.0, 5.0, 5.0, 6.0, 7.0]
    assert curve.low.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert curve.high.tolist() == [3.0, 6.0, 9.0, 6.0, 7.0, 8.0]
    assert curve.runs.tolist() == [2, 3, 3, 2, 2, 2]


def test_timing_bar_is_top_level_phases_averaged_with_the_rest_as_other(tmp_path):
    slower = {**TIMING, "update": {"mean_ms": 24.0}, "iteration": {"mean_ms": 40.0}}
    runs = (
        read_run(write_run(tmp_path / "a", timing=TIMING)),
        read_run(write_run(tmp_path / "b", timing=slower)),
        read_run(write_run(tmp_path / "c", timing={})),
    )
    means = mean_phase_ms(Group("x", "x", runs))
    # Run c has no timing and does not count; other = iteration - (collect + update + log).
    assert means == pytest.approx({"collect": 6.0, "update": 22.0, "log": 1.0, "other": (3.0 + 9.0) / 2})
    tight = {"collect": {"mean_ms": 10.0}, "update": {"mean_ms": 20.5}, "iteration": {"mean_ms": 30.0}}
    assert "other" not in mean_phase_ms(Group("x", "x", (read_run(write_run(tmp_path / "d", timing=tight)),)))


def test_the_figure_grows_with_its_legend_and_long_names_are_clipped_on_the_bars(tmp_path):
    runs = [read_run(write_run(tmp_path / f"r{i}", name=f"experiment_with_a_long_name_{i}")) for i in range(5)]
    groups = group_runs(runs)
    assert groups[0].short == "experiment_with_a_lon\N{HORIZONTAL ELLIPSIS}\nseed 0"
    assert groups[0].label == "experiment_with_a_long_name_0 (ppo on CartPole-v1), seed 0"
    assert figure_size(groups[:3]) == FIGSIZE_IN
    assert figure_size(groups) == (FIGSIZE_IN[0], FIGSIZE_IN[1] + 2 * LEGEND_ROW_IN)


def test_return_axis_says_what_the_mean_is_over(tmp_path):
    run = read_run(write_run(tmp_path / "a"))
    assert y_label(RETURN, [run]) == "episode return (mean of last 100 episodes)"
    assert y_label("loss/policy", [run]) == "loss/policy"


def test_without_matplotlib_the_error_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(InputError) as caught:
        plot_runs([tmp_path / "missing"], output=tmp_path / "curve.png")
    assert caught.value.render().startswith("rlcli plot needs matplotlib: pip install 'rlcli[plot]'")


def test_an_unknown_column_lists_the_columns_there_are(tmp_path):
    require_extra("matplotlib")
    run = write_run(tmp_path / "run")
    with pytest.raises(InputError) as caught:
        plot_runs([run], output=tmp_path / "curve.png", y="eval/return_mean")
    available = ", ".join(COLUMNS)
    assert caught.value.render() == f"--y eval/return_mean: no run has this column; available: {available}"
    assert not (tmp_path / "curve.png").exists()


def test_plot_runs_writes_the_png_and_names_groups_and_skipped_runs(tmp_path):
    require_extra("matplotlib")
    out = tmp_path / "runs"
    seeds_group(out, "ppo_cartpole", [0, 1, 2])
    write_run(out / "ppo_cartpole-single", seed=7)
    write_run(out / "ppo_cartpole-killed", name="killed", returns=[math.nan] * 5)
    result = plot_runs([out], output=tmp_path / "curve.png", x="time", band="iqr")
    assert result.output == tmp_path / "curve.png"
    assert png_size(result.output) == (int(FIGSIZE_IN[0] * DPI), int(FIGSIZE_IN[1] * DPI))
    assert [(g.label, len(g.runs)) for g in result.groups] == [
        ("ppo_cartpole (ppo on CartPole-v1), median of 3 seeds", 3),
        ("ppo_cartpole (ppo on CartPole-v1), seed 7", 1),
    ]
    assert result.skipped == [(out / "ppo_cartpole-killed", f"no value of {RETURN} yet")]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"x": "steps"}, "--x steps: allowed: frames, time"),
        ({"band": "std"}, "--band std: allowed: minmax, iqr"),
        ({"output": Path("curve.svg")}, "-o curve.svg: give a file name ending in .png"),
        ({"output": Path("no/such/folder/curve.png")}, "folder no/such/folder does not exist"),
    ],
)
def test_bad_options_are_input_errors(tmp_path, kwargs, fragment):
    require_extra("matplotlib")
    run = write_run(tmp_path / "run")
    with pytest.raises(InputError) as caught:
        plot_runs([run], **{"output": tmp_path / "curve.png", **kwargs})
    assert fragment in caught.value.render()
