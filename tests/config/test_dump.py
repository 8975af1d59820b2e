"""``config/dump.py``: the TOML written for a config loads back to an equal config."""

from __future__ import annotations

import math
import sys

import pytest

from rlcli.config.dump import to_toml
from rlcli.config.load import load_config
from rlcli.config.schema import RunConfig
from support.paths import PRESET_FILES
from support.presets import MINIMAL_TOML

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


def round_trip(cfg: RunConfig) -> RunConfig:
    return RunConfig.model_validate(tomllib.loads(to_toml(cfg)))


@pytest.mark.parametrize("preset", PRESET_FILES, ids=lambda p: p.stem)
def test_every_preset_round_trips(preset):
    cfg = load_config(preset)
    assert round_trip(cfg) == cfg


def test_every_field_is_written(write_toml):
    cfg = load_config(write_toml("ok.toml", MINIMAL_TOML))
    data = tomllib.loads(to_toml(cfg))
    # Unset optional fields (None) and the offline schedules (every_steps) are left out; everything else
    # appears, defaults included.
    everything = cfg.model_dump(mode="json", exclude_none=True)
    for section in ("checkpoint", "eval"):
        del everything[section]["every_steps"]
    assert data == everything
    assert "stop_at_return" not in data["run"] and data["optim"]["lr"] == 3e-4


def test_awkward_values_round_trip(write_toml):
    cfg = load_config(
        write_toml("ok.toml", MINIMAL_TOML),
        [
            'run.output_dir="runs/with \\"quotes\\", tab\\t, back\\\\slash, caf\u00e9"',
            "run.stop_at_return=-1e300",
            "optim.lr=1e-10",
            'env.kwargs={"key with spaces" = 1, "a.b" = [1.5, 2], nested = {deep = {x = true}}, empty = {},'
            " low = -inf}",
        ],
    )
    again = round_trip(cfg)
    assert again == cfg
    assert again.run.output_dir == 'runs/with "quotes", tab\t, back\\slash, caf\u00e9'
    assert again.run.stop_at_return == -1e300
    # Typed fields reject inf, but env arguments may carry it, and it survives the trip.
    assert math.isinf(again.env.kwargs["low"]) and again.env.kwargs["low"] < 0
    assert again.env.kwargs["nested"] == {"deep": {"x": True}}


def test_output_has_one_table_per_section(write_toml):
    cfg = load_config(write_toml("ok.toml", MINIMAL_TOML))
    headers = [line for line in to_toml(cfg).splitlines() if line.startswith("[")]
    assert headers == [
        "[run]",
        "[env]",
        "[network]",
        "[algo]",
        "[collector]",
        "[optim]",
        "[logger]",
        "[timing]",
        "[checkpoint]",
        "[eval]",
    ]
