"""rlcli export: the exported files act as the run's policy does (both formats, MLP, Dict + CNN, Box and
Discrete actions, offline), rlcli eval --policy plays them on the same episodes, and bad input exits 2."""

from __future__ import annotations

import json
import os
import shutil
import stat

import numpy as np
import pytest
import torch
from torch import nn

from rlcli.carry import Carry
from rlcli.config.errors import InputError
from rlcli.envs.random_play import random_observations
from rlcli.play.export import deployed, export_policy
from rlcli.play.playback import evaluate_run
from rlcli.play.policy_file import PolicyFile
from rlcli.trainer import checkpoint
from rlcli.trainer.checkpoint_folder import find_checkpoint
from support.cli import invoke
from support.distributions import SAMPLES, assert_same_distribution
from support.paths import env_packages_importable
from support.presets import require_extra


def recorded_observations(folder, count: int, packages=()) -> dict | np.ndarray:
    """``count`` raw observations of the run's env, met by random actions (a dict of arrays for a Dict)."""
    from rlcli.config.load import load_config
    from rlcli.envs import import_env_packages

    import_env_packages(list(packages))
    return random_observations(load_config(folder / "config.toml").env, count)


def as_inputs(observations, metadata) -> tuple[list[torch.Tensor], object]:
    """(The file's inputs in order, the observation as an agent takes it: a tensor, or a dict by key.)"""
    keys = [name.removeprefix("obs.") for name in metadata["inputs"] if name.startswith("obs.")]
    if keys:
        by_key = {key: torch.as_tensor(observations[key]) for key in keys}
        return list(by_key.values()), by_key
    return [torch.as_tensor(observations)], torch.as_tensor(observations)


@pytest.mark.parametrize("fmt", ["pt2", "onnx"])
@pytest.mark.parametrize("run", ["on_policy_run", "off_policy_run", "offline_run", "pixel_run"])
def test_exported_files_give_the_eager_policys_actions_on_recorded_observations(run, fmt, request, tmp_path):
    require_extra("onnxruntime")
    folder = request.getfixturevalue(run).folder
    packages = ["rlcli_test_envs"] if run == "pixel_run" else []
    if packages:
        env_packages_importable()
    report = export_policy(folder, format=fmt, out=tmp_path / f"policy.{fmt}", env_packages=packages)
    assert report.path.is_file() and report.metadata["batch"] == "dynamic"
    _, weights = find_checkpoint(folder)
    module, _, metadata = deployed(folder, weights)
    inputs, observation = as_inputs(recorded_observations(folder, 300, packages), metadata)
    with torch.no_grad():
        eager = module(*inputs)
    played = PolicyFile(report.path).actions(observation, deterministic=True)
    assert played.shape == eager.shape and played.dtype == eager.dtype
    if eager.dtype.is_floating_point:
        # The bar: 1e-5 absolute for continuous actions (onnxruntime's kernels round differently).
        torch.testing.assert_close(played, eager, atol=1e-5, rtol=0)
        assert not torch.equal(eager, eager[:1].expand_as(eager)), "every observation got the same action"
    else:
        assert torch.equal(played, eager)
    # The metadata says what the file was made from.
    assert report.metadata["env"] == metadata["env"] and report.metadata["frames"] > 0
    assert PolicyFile(report.path).metadata == report.metadata


def test_a_fixed_batch_file_takes_that_many_rows_and_one_file_per_call_gives_the_same_actions(on_policy_run, tmp_path):
    require_extra("onnxruntime")
    folder = on_policy_run.folder
    fixed = export_policy(folder, format="onnx", out=tmp_path / "one.onnx", batch=1)
    dynamic = export_policy(folder, format="onnx", out=tmp_path / "any.onnx")
    assert fixed.metadata["batch"] == 1
    observations = torch.as_tensor(recorded_observations(folder, 20))
    batched = PolicyFile(dynamic.path).actions(observations, deterministic=True)
    one = PolicyFile(fixed.path)
    assert torch.equal(torch.cat([one.actions(row[None], deterministic=True) for row in observations]), batched)
    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

    with pytest.raises(InvalidArgument, match="dimensions"):
        one.actions(observations, deterministic=True)


@pytest.mark.parametrize("fmt", ["onnx", "pt2"])
def test_eval_policy_plays_the_file_on_the_runs_episodes_with_the_same_returns(off_policy_run, fmt, tmp_path):
    require_extra("onnxruntime")
    folder = off_policy_run.folder
    out = tmp_path / f"policy.{fmt}"
    exported = invoke("export", folder, "--format", fmt, "--out", out)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert f"{fmt}: {out}" in exported.stdout.replace("\n", "")
    result = invoke("eval", folder, "--policy", out, "--episodes", "3", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["policy"] == str(out)
    assert len(report["returns"]) == 3
    # Continuous actions: onnxruntime's rounding may move a return by float noise, never more.
    np.testing.assert_allclose(report["policy_result"]["returns"], report["returns"], atol=1e-3, rtol=0)
    table = invoke("eval", folder, "--policy", out, "--episodes", "2")
    assert table.returncode == 0 and "each episode" in table.stdout


@pytest.mark.parametrize("fmt", ["pt2", "onnx"])
@pytest.mark.parametrize("run", ["on_policy_run", "off_policy_run", "offline_run"])
def test_a_stochastic_file_draws_its_actions_from_the_runs_policy(run, fmt, request, tmp_path):
    require_extra("onnxruntime")
    folder = request.getfixturevalue(run).folder
    report = export_policy(folder, format=fmt, out=tmp_path / f"policy.{fmt}", stochastic=True)
    played = PolicyFile(report.path)
    assert report.metadata["stochastic"] is True and played.stochastic
    _, weights = find_checkpoint(folder)
    module, _, metadata = deployed(folder, weights, stochastic=True)
    rows = 4
    inputs, observation = as_inputs(recorded_observations(folder, rows), metadata)
    repeated = observation.repeat_interleave(SAMPLES, 0)
    # The eager draws take evaluation's path (a generator given); the file's, the generator-free one.
    module.generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        eager = module(repeated)
    assert_same_distribution(played.actions(repeated, deterministic=False), eager, rows)
    # The deterministic file of the same run gives one action an observation: the mode, not a draw.
    exact = PolicyFile(export_policy(folder, format=fmt, out=tmp_path / f"exact.{fmt}").path)
    modes = exact.actions(repeated, deterministic=True).reshape(rows, SAMPLES, -1)
    assert torch.equal(modes, modes[:, :1].expand_as(modes))
    # rlcli eval --stochastic plays it beside the run's own sampled policy.
    evaluated = evaluate_run(folder, episodes=2, deterministic=False, policy=report.path)
    assert evaluated.policy_result.episodes == 2 and np.isfinite(evaluated.policy_result.returns).all()


def test_stochastic_is_refused_for_a_policy_without_a_distribution(tmp_path):
    from rlcli.config.load import validate_data
    from rlcli.run import build_run
    from rlcli.trainer.loop import train
    from support.offline import random_dataset

    data = {
        "run": {"seed": 0, "device": "cpu", "output_dir": str(tmp_path)},
        "env": {"id": "Pendulum-v1"},
        "network": {"hidden_sizes": [16]},
        "algo": {"name": "bc", "policy": "deterministic", "batch_size": 16},
        "data": {"dataset": random_dataset("Pendulum-v1"), "total_steps": 10, "steps_per_iteration": 10},
        "eval": {"final_episodes": 0},
        "timing": {"enabled": False},
    }
    folder = train(build_run(validate_data(data))).run_dir
    result = invoke("export", folder, "--format", "pt2", "--stochastic")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    message = " ".join(result.stderr.split())
    assert f"--stochastic: the bc policy of {folder} has no distribution to draw from" in message
    assert 'BC with policy = "gaussian" or Discrete actions' in message
    assert not (folder / "policy.pt2").exists()


class CumMax(nn.Module):
    """An operator the ONNX exporter has no lowering for (torch.export traces it)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cummax(x, -1).values


class Branchy(nn.Module):
    """Python control flow on a tensor's value: neither exporter can trace it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 if x.sum() > 0 else x


def test_an_operator_an_exporter_cannot_take_is_named_with_its_module_and_what_to_try(tmp_path, capfd):
    require_extra("onnxruntime")
    from rlcli.config.load import load_config
    from rlcli.play.export import deployed_untrained, examples_for, write_file

    cfg = load_config("ppo_cartpole")
    module, observation_space, action_space = deployed_untrained(cfg, source="ppo_cartpole")
    module.agent.encoder = nn.Sequential(module.agent.encoder, CumMax())
    examples = examples_for(module, observation_space, action_space)
    metadata = {"algo": "ppo", "inputs": module.input_names}
    with pytest.raises(InputError) as raised:
        write_file(module, examples, tmp_path / "p.onnx", metadata, format="onnx", dynamic=True)
    message = str(raised.value)
    assert message.startswith("--format onnx: the ONNX exporter cannot lower aten.cummax, called in agent.encoder.1")
    assert "(CumMax)" in message and message.endswith("try --format pt2")
    assert not (tmp_path / "p.onnx").exists() and not list(tmp_path.iterdir()), "a partial file was left"
    # pt2 takes the same module, and its file acts as the module does.
    write_file(module, examples, tmp_path / "p.pt2", metadata, format="pt2", dynamic=True)
    observations = torch.as_tensor(random_observations(cfg.env, 50))
    with torch.no_grad():
        assert torch.equal(
            PolicyFile(tmp_path / "p.pt2").actions(observations, deterministic=True), module(observations)
        )
    # Control flow on values: neither format traces it; the module is named, and a sampled file is told to try
    # the deterministic one.
    module, _, _ = deployed_untrained(cfg, source="ppo_cartpole", stochastic=True)
    module.agent.policy.net[1] = nn.Sequential(module.agent.policy.net[1], Branchy())
    capfd.readouterr()
    for fmt in ("pt2", "onnx"):
        with pytest.raises(InputError, match=r"agent\.policy\.net\.1\.1 \(Branchy\)") as raised:
            write_file(module, examples, tmp_path / f"q.{fmt}", metadata, format=fmt, dynamic=True)
        assert str(raised.value).endswith("export without --stochastic")
    assert "def forward" not in capfd.readouterr().err, "the exporter's partial graph reached the console"


def test_the_default_output_is_policy_dot_format_in_the_run_folder(copy_run, off_policy_run):
    folder = copy_run(off_policy_run)
    report = export_policy(folder, format="pt2")
    assert report.path == folder / "policy.pt2" and report.path.is_file()
    assert not list(folder.glob(".policy.pt2.*")), "a temporary file was left behind"


@pytest.mark.skipif(os.name != "posix", reason="permission bits are POSIX")
@pytest.mark.parametrize("fmt", ["pt2", "onnx"])
def test_exported_files_have_the_permissions_of_the_runs_config_toml(fmt, tmp_path):
    from rlcli.config.load import validate_data
    from rlcli.run import build_run
    from rlcli.trainer.loop import train

    if fmt == "onnx":
        require_extra("onnx")
    # Trained here, not copied from a session run: a copy keeps the modes that the session's umask gave.
    before = os.umask(0o022)
    try:
        data = {
            "run": {"seed": 0, "device": "cpu", "output_dir": str(tmp_path)},
            "env": {"id": "CartPole-v1", "num_envs": 2},
            "network": {"hidden_sizes": [8]},
            "algo": {"name": "ppo", "minibatch_size": 32, "epochs": 1},
            "collector": {"frames_per_batch": 64, "total_frames": 64},
            "eval": {"final_episodes": 0},
            "timing": {"enabled": False},
        }
        folder = train(build_run(validate_data(data))).run_dir
        report = export_policy(folder, format=fmt)
    finally:
        os.umask(before)
    config_mode = stat.S_IMODE((folder / "config.toml").stat().st_mode)
    assert config_mode == 0o644
    assert stat.S_IMODE(report.path.stat().st_mode) == config_mode


def test_bad_input_exits_2_naming_the_flag_or_file(off_policy_run, on_policy_run, copy_run, tmp_path, monkeypatch):
    folder = off_policy_run.folder
    cases = [
        (
            ["export", folder, "--format", "tflite"],
            "--format: 'tflite' is not a format rlcli exports; allowed: onnx, pt2",
        ),
        (["export", folder, "--batch", "many"], "--batch: 'many': give a number of rows"),
        (["export", folder, "--out", tmp_path / "policy.txt"], "give a file name ending in .onnx"),
        (["export", tmp_path / "missing"], "no such file or folder"),
    ]
    for args, message in cases:
        result = invoke(*args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert message in " ".join(result.stderr.split()), (args, result.stderr)
        assert "Traceback" not in result.stderr
    # A run folder with no weights yet.
    empty = tmp_path / "empty-run"
    empty.mkdir()
    shutil.copy(folder / "config.toml", empty / "config.toml")
    result = invoke("export", empty)
    assert result.returncode == 2 and "no final.pt and no checkpoints" in result.stderr
    # A checkpoint another rlcli wrote in its own checkpoint format.
    other_format = copy_run(off_policy_run)
    payload = torch.load(other_format / "final.pt", weights_only=True)
    payload["format"] = checkpoint.FORMAT + 1
    torch.save(payload, other_format / "final.pt")
    result = invoke("export", other_format / "final.pt")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"written in checkpoint format {checkpoint.FORMAT + 1}; this rlcli reads format {checkpoint.FORMAT}" in (
        " ".join(result.stderr.split())
    )
    # A file exported from another env's run.
    other = export_policy(on_policy_run.folder, format="pt2", out=tmp_path / "cartpole.pt2")
    result = invoke("eval", folder, "--policy", other.path)
    assert result.returncode == 2
    assert "its metadata names another env 'CartPole-v1' (the run's: 'Pendulum-v1')" in " ".join(result.stderr.split())
    # A file played in the other mode than it was exported in.
    exact = export_policy(folder, format="pt2", out=tmp_path / "exact.pt2")
    result = invoke("eval", folder, "--policy", exact.path, "--stochastic")
    assert result.returncode == 2
    assert "the file holds the deterministic policy: drop --stochastic" in " ".join(result.stderr.split())
    sampled = export_policy(folder, format="pt2", out=tmp_path / "sampled.pt2", stochastic=True)
    result = invoke("eval", folder, "--policy", sampled.path)
    assert result.returncode == 2
    assert "the file samples its actions (rlcli export --stochastic): play it with --stochastic" in " ".join(
        result.stderr.split()
    )
    # A file that is not an exported policy.
    bogus = tmp_path / "bogus.onnx"
    bogus.write_bytes(b"not onnx")
    result = invoke("eval", folder, "--policy", bogus)
    assert result.returncode == 2 and "cannot be read as an exported policy" in result.stderr


def test_onnx_without_the_export_extra_names_the_extra(off_policy_run, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_onnx(name, *args, **kwargs):
        if name.split(".")[0] in ("onnx", "onnxscript"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnx)
    with pytest.raises(InputError, match=r"needs the export extra: pip install 'rlcli\[export\]'"):
        export_policy(off_policy_run.folder, format="onnx")


def test_a_dict_observation_file_takes_one_named_input_per_key(pixel_run, tmp_path):
    require_extra("onnxruntime")
    import onnxruntime

    env_packages_importable()
    report = export_policy(pixel_run.folder, format="onnx", out=tmp_path / "p.onnx", env_packages=["rlcli_test_envs"])
    session = onnxruntime.InferenceSession(str(report.path))
    names = [entry.name for entry in session.get_inputs()]
    assert names == report.metadata["inputs"] and all(name.startswith("obs.") for name in names)
    image = next(entry for entry in session.get_inputs() if entry.type == "tensor(uint8)")
    assert image.shape[1:] == [3, 16, 16], "the image input keeps the env's uint8 frames"
    assert isinstance(image.shape[0], str), "the batch dimension is dynamic"


@pytest.fixture(scope="module")
def masked_and_memory_runs(tmp_path_factory) -> dict[str, object]:
    """dqn_taxi_masked (masks from info) and ppo_lstm_cartpolenovel (an LSTM), 1,024 frames each."""
    from rlcli.config.load import load_config
    from rlcli.run import build_run
    from rlcli.trainer.loop import train

    folders = {}
    for preset in ("dqn_taxi_masked", "ppo_lstm_cartpolenovel"):
        out = tmp_path_factory.mktemp(preset)
        cfg = load_config(
            f"presets/{preset}.toml",
            overrides=["collector.total_frames=1024", "eval.final_episodes=0", f'run.output_dir="{out}"'],
        )
        folders[preset] = train(build_run(cfg)).run_dir
    return folders


@pytest.mark.parametrize("fmt", ["pt2", "onnx"])
def test_a_masked_policys_file_takes_the_mask_and_never_picks_a_forbidden_action(masked_and_memory_runs, fmt, tmp_path):
    require_extra("onnxruntime")
    folder = masked_and_memory_runs["dqn_taxi_masked"]
    report = export_policy(folder, format=fmt, out=tmp_path / f"taxi.{fmt}")
    assert report.metadata["inputs"] == ["obs", "action_mask"]
    played = PolicyFile(report.path)
    _, weights = find_checkpoint(folder)
    module, _, _ = deployed(folder, weights)
    obs = torch.as_tensor(recorded_observations(folder, 200))
    generator = torch.Generator().manual_seed(0)
    # Random masks with at least one allowed action a row.
    mask = torch.rand(200, 6, generator=generator) < 0.5
    mask[torch.arange(200), torch.randint(6, (200,), generator=generator)] = True
    carry = Carry(200, "cpu")
    carry.mask = mask
    with torch.no_grad():
        eager = module(obs, mask)
    actions = played.actions(obs, deterministic=True, carry=carry)
    assert torch.equal(actions, eager)
    assert mask[torch.arange(200), actions].all(), "an action the mask forbids"
    # The same observations without a mask would act otherwise somewhere: the mask is read.
    with torch.no_grad():
        unmasked = module(obs, torch.ones_like(mask))
    assert not torch.equal(unmasked, actions)


@pytest.mark.parametrize("fmt", ["pt2", "onnx"])
def test_a_memory_policys_file_threads_its_state_as_the_eager_policy_does(masked_and_memory_runs, fmt, tmp_path):
    require_extra("onnxruntime")
    folder = masked_and_memory_runs["ppo_lstm_cartpolenovel"]
    report = export_policy(folder, format=fmt, out=tmp_path / f"lstm.{fmt}")
    assert report.metadata["inputs"] == ["obs", "memory", "first"]
    assert report.metadata["outputs"] == ["action", "next_memory"]
    played = PolicyFile(report.path)
    _, weights = find_checkpoint(folder)
    module, _, _ = deployed(folder, weights)
    # 4 envs' worth of observations, 30 steps, an episode starting on env 1 at step 10.
    obs = torch.as_tensor(recorded_observations(folder, 120)).reshape(30, 4, -1)
    carry = Carry.of(played, 4, "cpu")
    memory, first = carry.memory.clone(), carry.first.clone()
    moved = False
    for step in range(30):
        if step == 10:
            first = torch.tensor([False, True, False, False])
            carry.first = first.clone()
        with torch.no_grad():
            eager, memory = module(obs[step], memory, first)
        actions = played.actions(obs[step], deterministic=True, carry=carry)
        assert torch.equal(actions, eager), step
        torch.testing.assert_close(carry.memory, memory, atol=1e-5, rtol=0)
        moved = moved or bool(memory.abs().sum() > 0)
        first = torch.zeros(4, dtype=torch.bool)
        carry.first = first.clone()
    assert moved, "the memory never left zero"
