"""Learning bars of the offline presets on datasets made here by ``rlcli datasets make``
(slow: run with ``python -m pytest -m slow``). One seed each, the preset's own budget.

The datasets come from a shorter sac_pendulum run than the recipe's (8k frames, 20k steps per
played dataset): the expert is weaker and the datasets smaller, which is the harder case for both bars."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rlcli.config.load import load_config
from rlcli.datasets import load_dataset, open_dataset
from rlcli.run import build_run
from rlcli.trainer.loop import train

pytestmark = pytest.mark.slow
minari = pytest.importorskip("minari", reason="the minari extra needs Python 3.11+")


@pytest.fixture(scope="module")
def datasets(tmp_path_factory, monkeypatch_module):
    root, scratch = tmp_path_factory.mktemp("minari"), tmp_path_factory.mktemp("make-datasets")
    monkeypatch_module.setenv("MINARI_DATASETS_PATH", str(root))
    # The command trains its expert in a tempfile folder: TMPDIR keeps that, as the datasets and the
    # working folder, under this session's folders, never in the repository or the machine's /tmp.
    made = subprocess.run(
        [sys.executable, "-m", "rlcli", "datasets", "make", "--all", "--frames", "8000", "--steps", "20000"],
        cwd=scratch,
        capture_output=True,
        text=True,
        env={**os.environ, "MINARI_DATASETS_PATH": str(root), "TMPDIR": str(scratch)},
    )
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    return {
        name: float(load_dataset(open_dataset(f"pendulum/{name}-v0")).episode_returns().mean())
        for name in ("random", "expert", "medium")
    }


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def final_evaluation(preset: str, tmp_path) -> float:
    cfg = load_config(preset, ["run.seed=0", f'run.output_dir="{tmp_path.as_posix()}"', "timing.enabled=false"])
    state = train(build_run(cfg))
    assert state.status == "completed"
    return state.last_eval["eval/return_mean"]


def test_bc_on_expert_scores_at_least_90_normalized(datasets, tmp_path):
    score = final_evaluation("bc_pendulum_expert", tmp_path)
    normalized = 100 * (score - datasets["random"]) / (datasets["expert"] - datasets["random"])
    assert normalized >= 90, (score, datasets)


def test_iql_on_medium_beats_the_dataset_s_mean_return(datasets, tmp_path):
    score = final_evaluation("iql_pendulum_medium", tmp_path)
    assert score > datasets["medium"], (score, datasets)
