import csv
import importlib.util
import json
import math

import pytest

from rlcli.config.errors import ConfigError
from rlcli.config.schema import LoggerConfig
from rlcli.loggers import check_backends, make_loggers


def test_csv_and_jsonl_rows_round_trip(tmp_path):
    loggers = make_loggers(LoggerConfig(backends=["csv", "jsonl", "csv"]), tmp_path)
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


def test_csv_and_jsonl_need_nothing_extra():
    check_backends(LoggerConfig(backends=["csv", "jsonl"]))
