"""Every shipped preset loads, builds, and is only read, never written."""

from __future__ import annotations

import pytest

from conftest import PRESET_FILES, PRESETS_TO_BUILD
from offline import random_dataset
from rlcli.algos import ALGORITHMS
from rlcli.config.load import load_config
from rlcli.run import check_build


def test_presets_exist_for_every_algorithm():
    assert PRESET_FILES
    assert {load_config(p).algo.name for p in PRESET_FILES} == set(ALGORITHMS)


@pytest.mark.parametrize("preset", PRESETS_TO_BUILD)
def test_preset_loads_and_builds(preset):
    before = preset.read_bytes()
    cfg = load_config(preset, ["run.device=cpu"])
    if cfg.offline:
        # Its dataset is made by benchmarks/make_datasets.py, not here: one of random actions on its env.
        pytest.importorskip("minari", reason="the minari extra needs Python 3.11+")
        cfg = load_config(preset, ["run.device=cpu", f'data.dataset="{random_dataset(cfg.env.id)}"'])
    summary = check_build(cfg, source=str(preset))
    assert summary.startswith(f"{cfg.algo.name} on {cfg.env.id}: ")
    assert preset.read_bytes() == before


@pytest.mark.parametrize("preset", PRESET_FILES, ids=lambda p: p.stem)
def test_preset_loads_by_name_as_by_path(preset):
    before = preset.read_bytes()
    assert load_config(preset.stem) == load_config(preset)
    assert preset.read_bytes() == before
