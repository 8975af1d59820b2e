import csv
import importlib.util
import json
import math

import pytest

from rlcli.config.errors import ConfigError
from rlcli.config.schema import LoggerConfig
from rlcli.loggers import check_backends, make_loggers

COLUMNS = ["iteration", "frames", "loss/policy", "rollout/episode_return_mean"]


def test_csv_and_jsonl_rows_round_trip(tmp_path):
    loggers = make_loggers(LoggerConfig(backends=["csv", "jsonl", "csv"]), tmp_path, COLUMNS)
    assert len(loggers.backends) == 2
    loggers.write({"iteration": 1, "frames": 64, "loss/policy": 0.5, "rollout/episode_return_mean": math.nan})
    loggers.write({"iteration": 2, "frames": 128, "loss/policy": -0.25, "rollout/episode_return_mean": 9.5})
    loggers.close()
    assert loggers.last_iteration == 2
    with (tmp_path / "metrics.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert [row["frames"] for row in rows] == ["64", "128"]
    assert float(rows[1]["loss/policy"]) == -0.25
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    # NaN is not JSON: it is written as null.
    assert lines[0]["rollout/episode_return_mean"] is None
    assert lines[1]["rollout/episode_return_mean"] == 9.5


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is not None, reason="tensorboard is installed")
def test_tensorboard_without_the_package_is_a_config_error():
    with pytest.raises(ConfigError) as info:
        check_backends(LoggerConfig(backends=["tensorboard"]), source="x.toml")
    assert "logger.backends" in info.value.render() and "pip install" in info.value.render()


def test_columns_are_fixed_before_the_first_row_and_late_terms_keep_theirs(tmp_path):
    columns = ["iteration", "frames", "loss/q", "stats/epsilon"]
    loggers = make_loggers(LoggerConfig(backends=["csv", "jsonl"]), tmp_path, columns)
    # The header is on disk before any row: a run that dies at once still names its columns.
    assert (tmp_path / "metrics.csv").read_text().splitlines() == [",".join(columns)]
    # A warm-up row without a loss, then rows with one, and a key outside the columns.
    loggers.write({"iteration": 1, "frames": 8, "stats/epsilon": 1.0})
    loggers.write({"iteration": 2, "frames": 16, "stats/epsilon": 0.5, "loss/q": 0.25, "unplanned": 3.0})
    loggers.close()
    with (tmp_path / "metrics.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert list(rows[0]) == columns
    assert rows[0]["loss/q"] == "" and rows[1]["loss/q"] == "0.25"
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [list(line) for line in lines] == [columns, columns]
    assert lines[0]["loss/q"] is None and lines[1]["loss/q"] == 0.25
