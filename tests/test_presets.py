"""Every shipped preset loads, builds, and is only read, never written."""

from __future__ import annotations

import pytest

from rlcli.algos import ALGORITHMS
from rlcli.config.load import load_config
from rlcli.run import check_build
from support.offline import random_dataset
from support.paths import PRESET_FILES
from support.presets import MISSING_EXTRAS, PRESETS_TO_BUILD


def test_presets_exist_for_every_algorithm():
    assert PRESET_FILES
    assert {load_config(p).algo.name for p in PRESET_FILES} == set(ALGORITHMS)


@pytest.mark.parametrize("preset", PRESETS_TO_BUILD)
def test_preset_loads_and_builds(preset):
    before = preset.read_bytes()
    cfg = load_config(preset, ["run.device=cpu"])
    if cfg.offline:
        # Its dataset is made by rlcli datasets make or downloaded, not here: one of random actions on its env.
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


def test_the_preset_on_a_hosted_dataset_trains_on_a_stand_in_written_under_its_id(tmp_path, monkeypatch):
    # Tests cannot download: a small dataset with Minari's id and the same env (so the same spaces) is
    # written in place, and the preset as shipped finds it by id, builds and trains a few gradient steps.
    pytest.importorskip("minari", reason="the minari extra needs Python 3.11+")
    preset = next(p for p in PRESET_FILES if p.stem == "iql_halfcheetah_medium")
    if MISSING_EXTRAS[preset]:
        pytest.skip(f"needs the {', '.join(MISSING_EXTRAS[preset])} extra")
    from rlcli.config.recipes import RECIPES
    from rlcli.run import build_run
    from rlcli.trainer.loop import train

    shipped = load_config(preset)
    assert shipped.data.dataset == "mujoco/halfcheetah/medium-v0" and shipped.data.dataset not in RECIPES
    random_dataset(shipped.env.id, episodes=2, max_steps=60, name=shipped.data.dataset, root=tmp_path / "minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    short = [
        "run.device=cpu",
        f'run.output_dir="{(tmp_path / "runs").as_posix()}"',
        "data.total_steps=4",
        "data.steps_per_iteration=2",
        "eval.episodes=1",
        "eval.final_episodes=0",
        "env.num_envs=1",
        "env.max_episode_steps=20",
    ]
    state = train(build_run(load_config(preset, short)))
    assert state.status == "completed" and state.frames == 4
    assert (state.run_dir / "final.pt").is_file() and "eval/return_mean" in state.last_eval
