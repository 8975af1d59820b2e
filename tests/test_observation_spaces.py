"""Every observation space through the real command: Dict observations (an image and a vector)
trained by PPO and SAC, their encoders printed by ``validate --build``, Discrete observations one-hot."""

from __future__ import annotations

import csv
import os

import pytest

from conftest import ROOT, assert_bad_input

ENV_PACKAGES = ROOT / "tests" / "envpkg"

DICT_PPO = """\
[env]
id = "RlcliTest/DictCorridor-v0"
num_envs = 4

[algo]
name = "ppo"
minibatch_size = 64

[collector]
frames_per_batch = 128
total_frames = 512
"""

DICT_SAC = """\
[env]
id = "RlcliTest/DictCorridorContinuous-v0"
num_envs = 2

[algo]
name = "sac"
batch_size = 32
learning_starts = 64

[algo.replay]
capacity = 1000

[collector]
frames_per_batch = 16
total_frames = 160
"""


@pytest.fixture
def env_packages(monkeypatch):
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", f"{ENV_PACKAGES}{os.pathsep}{path}" if path else str(ENV_PACKAGES))


@pytest.mark.parametrize("text", [DICT_PPO, DICT_SAC], ids=["ppo", "sac"])
def test_dict_observations_train_from_the_command_line(rlcli, write_toml, tmp_path, env_packages, text):
    config = write_toml("dict.toml", text)
    result = rlcli("train", config, "--out", tmp_path / "runs", "--env-package", "rlcli_test_envs")
    assert result.returncode == 0, result.stdout + result.stderr
    (metrics,) = (tmp_path / "runs").glob("*/metrics.csv")
    rows = list(csv.DictReader(metrics.open(encoding="utf-8")))
    losses = [key for key in rows[-1] if key.startswith("loss/") and rows[-1][key] not in ("", "nan")]
    assert losses, rows[-1]


def test_validate_build_prints_each_encoder_of_a_dict_observation(rlcli, write_toml, env_packages):
    result = rlcli("validate", "--build", "--json", write_toml("dict.toml", DICT_SAC), "--env-package",
                   "rlcli_test_envs")
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout
    # The actor and the critic each read both keys: the 16x16 image through IMPALA's CNN (too small
    # for the Nature CNN), the position as it is.
    assert "actor.encoder dict(image: impala_cnn -> 256, position: flat -> 1) -> 257" in summary
    assert "critic.encoder dict(image: impala_cnn -> 256, position: flat -> 1) -> 257" in summary


def test_nature_cnn_on_a_small_dict_image_names_the_minimum_size(rlcli, write_toml, env_packages):
    config = write_toml("dict.toml", DICT_PPO + '\n[network]\nencoder = "nature_cnn"\n')
    result = rlcli("validate", "--build", config, "--env-package", "rlcli_test_envs")
    assert_bad_input(result, "network.encoder", "key 'image'", "16x16", "at least 36x36")


def test_normalizing_dict_observations_is_refused(rlcli, write_toml, env_packages):
    config = write_toml("dict.toml", DICT_PPO.replace('num_envs = 4', 'num_envs = 4\nnormalize_observation = true'))
    result = rlcli("validate", "--build", config, "--env-package", "rlcli_test_envs")
    assert_bad_input(result, "env.normalize_observation", "Dict observations")
