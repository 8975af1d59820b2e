"""Bad input through ``rlcli``: exit status 2 and a short message, never a traceback.

One test per kind of mistake. Each runs ``rlcli show-config`` in this process (its errors go to
stderr through ``cli/render.py``) and checks that the message names the file, the dotted field,
the bad value and what is allowed. ``test_validate.py`` checks the same mistakes in bulk through
``validate --json``. One test runs the real command (integration layer): exit status 2 with no
traceback as the shell sees it.
"""

from __future__ import annotations

import pytest

from support.cli import assert_bad_input
from support.presets import MINIMAL_TOML

PPO = '[env]\nid = "CartPole-v1"\n\n[algo]\nname = "ppo"\n'


def show_config_error(run, tmp_path, text: str | None, *args: str, name: str = "bad.toml"):
    """Run ``rlcli show-config`` on ``text`` written to ``name`` (or on ``args`` alone) through
    ``run``: the ``cli`` fixture (this process) or the ``rlcli`` fixture (the real command)."""
    if text is not None:
        (tmp_path / name).write_text(text, encoding="utf-8")
        args = (name, *args)
    result = run("show-config", *args, cwd=tmp_path)
    assert result.stdout == "", "a failed show-config must print no config"
    # A few lines: the header naming the file, then one line per problem.
    assert len(result.stderr.strip().splitlines()) <= 6, result.stderr
    return result


def test_toml_syntax_error_gives_line_and_column(cli, tmp_path):
    text = '[env]\nid = "CartPole-v1"\nnum_envs = 8 8\n'
    result = show_config_error(cli, tmp_path, text)
    assert_bad_input(result, "invalid config bad.toml", "bad.toml:3:14", "TOML syntax error")


def test_unknown_section_suggests_the_close_one(cli, tmp_path):
    result = show_config_error(cli, tmp_path, PPO + "\n[optimizer]\nlr = 0.1\n")
    assert_bad_input(
        result,
        "invalid config bad.toml",
        "optimizer: unknown section",
        "did you mean [optim]?",
        "allowed sections: algo, checkpoint, collector, data, env, eval, logger, network, optim, run, timing",
    )


def test_unknown_key_suggests_the_close_one(cli, tmp_path):
    result = show_config_error(cli, tmp_path, PPO + "clip_epsilom = 0.1\n")
    assert_bad_input(
        result,
        "invalid config bad.toml",
        "algo.clip_epsilom: unknown key; did you mean clip_epsilon?",
        "allowed in [algo]: clip_epsilon, clip_schedule",
    )


def test_key_of_another_algorithm_names_its_owner(cli, tmp_path):
    text = '[env]\nid = "CartPole-v1"\n\n[algo]\nname = "a2c"\nclip_epsilon = 0.1\n'
    result = show_config_error(cli, tmp_path, text)
    output = assert_bad_input(
        result,
        "invalid config bad.toml",
        "algo.clip_epsilon: unknown key",
        "'clip_epsilon' belongs to ppo, ippo, mappo, not a2c",
    )
    assert "allowed in [algo]: entropy_coef, gamma, name, normalize_advantage, return_lambda, sde_sample_freq" in output


def test_wrong_type_names_the_value_and_the_type(cli, tmp_path):
    text = '[env]\nid = "CartPole-v1"\nnum_envs = "eight"\n\n[algo]\nname = "ppo"\n'
    result = show_config_error(cli, tmp_path, text)
    assert_bad_input(result, "invalid config bad.toml", "env.num_envs: expected an integer", 'got the string "eight"')


def test_out_of_range_values_are_all_reported_at_once(cli, tmp_path):
    text = '[env]\nid = "CartPole-v1"\nnum_envs = 0\n\n[algo]\nname = "ppo"\ngamma = 1.5\n\n[optim]\nlr = -0.001\n'
    result = show_config_error(cli, tmp_path, text)
    assert_bad_input(
        result,
        "invalid config bad.toml",
        "env.num_envs: 0 is out of range; allowed: 1 to 4096",
        "algo.gamma: 1.5 is out of range; allowed: 0 to 1",
        "optim.lr: -0.001 is out of range; allowed: > 0 and <= 1",
    )


def test_unknown_algorithm_lists_the_known_ones(cli, tmp_path):
    text = '[env]\nid = "CartPole-v1"\n\n[algo]\nname = "muzero"\n'
    result = show_config_error(cli, tmp_path, text)
    assert_bad_input(
        result, "invalid config bad.toml", "algo: unknown algorithm 'muzero'", "known algorithms: ppo, a2c, reinforce"
    )


def test_unknown_env_id_suggests_close_ids(cli, tmp_path):
    text = '[env]\nid = "CartPole-v2"\n\n[algo]\nname = "ppo"\n'
    result = show_config_error(cli, tmp_path, text)
    assert_bad_input(
        result,
        "invalid config bad.toml",
        "env.id: unknown gymnasium env id 'CartPole-v2'",
        "did you mean 'CartPole-v1'",
    )


def test_module_qualified_env_id_is_rejected(cli, tmp_path):
    text = '[env]\nid = "os:system"\n\n[algo]\nname = "ppo"\n'
    result = show_config_error(cli, tmp_path, text)
    assert_bad_input(
        result, "invalid config bad.toml", "env.id: module-qualified env id 'os:system' is not allowed", "CartPole-v1"
    )


def test_missing_file(cli, tmp_path):
    result = show_config_error(cli, tmp_path, None, "missing.toml")
    assert_bad_input(result, "invalid config missing.toml", "file not found")


def test_extends_cycle_names_both_files(cli, tmp_path):
    (tmp_path / "b.toml").write_text('extends = "a.toml"\n', encoding="utf-8")
    result = show_config_error(cli, tmp_path, 'extends = "b.toml"\n', name="a.toml")
    output = assert_bad_input(result, "invalid config a.toml", "extends cycle:")
    cycle = output.split("extends cycle:", 1)[1]
    assert cycle.index("/a.toml") < cycle.index("/b.toml") < cycle.rindex("/a.toml")


def test_set_without_equals_sign(cli, tmp_path):
    result = show_config_error(cli, tmp_path, None, "ppo_cartpole", "--set", "optim.lr")
    assert_bad_input(result, "--set optim.lr", "expected KEY=VALUE", "got 'optim.lr'")


def test_set_of_unknown_paths_names_the_override(cli, tmp_path):
    result = show_config_error(
        cli, tmp_path, None, "ppo_cartpole", "--set", "optim.lrr=1e-3", "--set", "optimizer.lr=1e-3"
    )
    assert_bad_input(
        result,
        "ppo_cartpole.toml",
        "optim.lrr: unknown key; did you mean lr?",
        "--set optim.lrr=1e-3",
        "optimizer: unknown section",
        "--set optimizer.lr=1e-3",
    )


def test_set_of_unparsable_value(cli, tmp_path):
    result = show_config_error(cli, tmp_path, None, "ppo_cartpole", "--set", "algo.gamma=[1,2")
    assert_bad_input(result, "algo.gamma: cannot parse value '[1,2'", "--set algo.gamma=[1,2")


def test_unknown_preset_lists_the_known_ones(cli, tmp_path):
    result = show_config_error(cli, tmp_path, None, "nope")
    assert_bad_input(
        result, "invalid config nope", "no preset named 'nope'", "a2c_cartpole", "ppo_cartpole", "ppo_pendulum"
    )


def test_cross_field_check_names_both_fields(cli, tmp_path):
    text = MINIMAL_TOML.replace("frames_per_batch = 64", "frames_per_batch = 66")
    result = show_config_error(cli, tmp_path, text)
    assert_bad_input(
        result,
        "invalid config bad.toml",
        "collector.frames_per_batch: frames_per_batch (66) must be a multiple of env.num_envs (4)",
    )


def test_human_message_keeps_bracketed_text_and_line(cli, tmp_path):
    result = show_config_error(cli, tmp_path, PPO + "clip_epsilom = 0.1\n")
    assert_bad_input(result, "in [algo]", "bad.toml:6")


@pytest.mark.integration
def test_the_real_command_exits_2_without_a_traceback(rlcli, tmp_path):
    # What the shell sees: the status and stderr of the real process, not of Typer's runner.
    result = show_config_error(rlcli, tmp_path, PPO + "clip_epsilom = 0.1\n")
    assert_bad_input(
        result, "invalid config bad.toml", "algo.clip_epsilom: unknown key; did you mean clip_epsilon?", "bad.toml:6"
    )
