"""Bad ``[network] memory`` settings through ``rlcli validate`` and ``rlcli train``: exit 2, the file and
the field named, what was wrong and what is allowed, no run folder."""

from __future__ import annotations

import pytest

from support.cli import assert_bad_input

BASE = """
[run]
output_dir = "{out}"
[env]
id = "CartPoleNoVel-v1"
num_envs = 4
[network]
memory = "lstm"
memory_size = 8
{network}
[algo]
name = "{algo}"
{algo_extra}
[collector]
frames_per_batch = 128
total_frames = 256
"""


@pytest.mark.parametrize(
    ("algo", "network", "algo_extra", "fragments"),
    [
        ("dqn", "", "", ("network.memory", "dqn has no memory", "ppo, a2c, reinforce")),
        (
            "ppo",
            "memory_shared = true\nshare_encoder = false",
            "minibatch_size = 64",
            ("network.memory_shared", "needs share_encoder = true"),
        ),
        (
            "ppo",
            "",
            "minibatch_size = 64\nsequence_length = 24",
            ("algo.sequence_length", "sequences of 24 steps must divide each env's rollout of 32 steps"),
        ),
        (
            "ppo",
            "",
            "minibatch_size = 48\nsequence_length = 32",
            ("algo.sequence_length", "must divide the minibatch of 48"),
        ),
    ],
    ids=["memory-on-dqn", "shared-without-shared-encoder", "sequence-vs-rollout", "sequence-vs-minibatch"],
)
@pytest.mark.parametrize("command", ["validate", "train"])
def test_bad_memory_settings_are_refused_naming_the_field(
    tmp_path, cli, write_toml, command, algo, network, algo_extra, fragments
):
    out = tmp_path / "runs"
    config = write_toml(
        "memory.toml", BASE.format(out=out.as_posix(), algo=algo, network=network, algo_extra=algo_extra)
    )
    assert_bad_input(cli(command, config), "memory.toml", *fragments)
    assert not out.exists(), "a refused config made a run folder"
