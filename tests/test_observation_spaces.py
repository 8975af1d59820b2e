"""Every observation space through the command line, in this process (Typer's runner): Dict
observations (an image and a vector) trained by PPO and SAC, their encoders printed by
``validate --build``, and an encoder that cannot read the env's observations refused as bad input.
The refusals' wording for Dict observations is checked on ``build_run`` itself."""

from __future__ import annotations

import csv

import pytest

from rlcli.config.errors import ConfigError, ConfigIssue
from rlcli.config.load import load_config
from rlcli.run import build_run
from support.cli import assert_bad_input
from support.paths import env_packages_importable

DICT_PPO = """\
[env]
id = "RlcliTest/DictCorridor-v0"
num_envs = 4

[algo]
name = "ppo"
epochs = 2
minibatch_size = 64

[collector]
frames_per_batch = 128
total_frames = 256

[eval]
# The final evaluation's default 100 episodes through the CNN would cost seconds; 2 still play it.
final_episodes = 2
"""

DICT_SAC = """\
[env]
id = "RlcliTest/DictCorridorContinuous-v0"
num_envs = 2

[algo]
name = "sac"
batch_size = 16
# Two iterations of 16 gradient steps: a CNN step costs tens of milliseconds on a CPU.
learning_starts = 176

[algo.replay]
capacity = 1000

[collector]
frames_per_batch = 16
total_frames = 192

[eval]
final_episodes = 2
"""


@pytest.mark.parametrize("text", [DICT_PPO, DICT_SAC], ids=["ppo", "sac"])
def test_dict_observations_train_from_the_command_line(cli, write_toml, tmp_path, env_packages, text):
    config = write_toml("dict.toml", text)
    result = cli("train", config, "--out", tmp_path / "runs", "--env-package", "rlcli_test_envs")
    assert result.returncode == 0, result.stdout + result.stderr
    (metrics,) = (tmp_path / "runs").glob("*/metrics.csv")
    rows = list(csv.DictReader(metrics.open(encoding="utf-8")))
    losses = [key for key in rows[-1] if key.startswith("loss/") and rows[-1][key] not in ("", "nan")]
    assert losses, rows[-1]


def test_validate_build_prints_each_encoder_of_a_dict_observation(cli, write_toml, env_packages):
    result = cli("validate", "--build", "--json", write_toml("dict.toml", DICT_SAC), "--env-package", "rlcli_test_envs")
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout
    # The actor and the critic each read both keys: the 16x16 image through IMPALA's CNN (too small
    # for the Nature CNN), the position as it is.
    assert "encoder" in summary
    assert summary.count("dict(image: impala_cnn -> 256, position: flat -> 1) -> 257") == 2, summary


def test_an_image_encoder_on_a_vector_observation_is_bad_input(cli):
    result = cli("validate", "--build", "ppo_cartpole", "--set", 'network.encoder="nature_cnn"')
    assert_bad_input(result, "network.encoder", "CartPole-v1", "reads images", '"flat"')


@pytest.fixture
def test_envs():
    # Imported once per session (sys.modules keeps it): a second import would register the envs again.
    env_packages_importable()
    import rlcli_test_envs  # noqa: F401 - registers the corridors


def refusal(text: str, tmp_path) -> ConfigIssue:
    """The one issue that building the config ``text`` raises."""
    path = tmp_path / "dict.toml"
    path.write_text(text, encoding="utf-8")
    cfg = load_config(path, [f'run.output_dir="{tmp_path.as_posix()}"'])
    with pytest.raises(ConfigError) as caught:
        build_run(cfg)
    (issue,) = caught.value.issues
    return issue


def test_nature_cnn_on_a_small_dict_image_names_the_key_and_the_minimum_size(test_envs, tmp_path):
    issue = refusal(DICT_PPO + '\n[network]\nencoder = "nature_cnn"\n', tmp_path)
    assert issue.path == "network.encoder"
    for fragment in ("key 'image'", "16x16", "at least 36x36", "impala_cnn"):
        assert fragment in issue.message


def test_normalizing_dict_observations_is_refused(test_envs, tmp_path):
    issue = refusal(DICT_PPO.replace("num_envs = 4", "num_envs = 4\nnormalize_observation = true"), tmp_path)
    assert issue.path == "env.normalize_observation" and "Dict observations" in issue.message
