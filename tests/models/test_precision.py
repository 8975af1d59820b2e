"""``run.precision = "bf16"``: the networks run under bfloat16 autocast with float32 weights, gradients and
outputs; a short run learns with finite losses; a CPU without bf16 instructions is refused at build."""

from __future__ import annotations

import math

import pytest
import torch

from rlcli.config.errors import ConfigError
from rlcli.config.load import load_config, validate_data
from rlcli.models.precision import autocast_networks
from rlcli.run import build_run
from rlcli.timing import Timer
from rlcli.trainer.loop import train
from rlcli.trainer.state import Hooks


def small(precision: str = "bf16", **run) -> dict:
    return {
        "run": {"device": "cpu", "precision": precision, "threads": 1} | run,
        "env": {"id": "CartPole-v1", "num_envs": 4},
        "algo": {"name": "ppo", "minibatch_size": 32},
        "collector": {"frames_per_batch": 64, "total_frames": 512},
    }


def test_only_the_outermost_networks_are_wrapped_and_their_outputs_are_float32():
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Sequential(torch.nn.Linear(8, 8)), torch.nn.Linear(8, 2))
    agent = torch.nn.ModuleDict({"net": net, "head": torch.nn.Linear(2, 1)})
    keys = list(agent.state_dict())
    assert autocast_networks(agent, torch.bfloat16, torch.device("cpu")) == 1
    x = torch.randn(5, 4)
    seen = []
    net[0].register_forward_hook(lambda module, args, out: seen.append(out.dtype))
    out = agent["net"](x)
    # Inside: the matmul ran in bfloat16; outside: float32, as the weights and their gradients.
    assert seen == [torch.bfloat16] and out.dtype == torch.float32
    out.sum().backward()
    assert all(p.dtype == p.grad.dtype == torch.float32 for p in net.parameters())
    assert list(agent.state_dict()) == keys
    # The same sums as float32 to bfloat16's precision (8 bits of mantissa).
    with torch.no_grad():
        reference = torch.nn.Sequential.forward(net, x)
    assert torch.allclose(out, reference, rtol=0.05, atol=0.05) and not torch.equal(out, reference)


def test_a_bf16_run_stores_float32_and_trains_with_finite_losses(tmp_path, monkeypatch):
    # Emulated where the CPU has no bfloat16 instructions: slower, the same arithmetic.
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True)
    cfg = validate_data(small(output_dir=str(tmp_path)))
    run = build_run(cfg)
    batch = run.source.next_batch(Timer(run.device))
    # What acting stores for the update (log-probabilities, values) is float32.
    assert all(value.dtype != torch.bfloat16 for value in batch.values(include_nested=True, leaves_only=True))
    state = train(run, hooks=Hooks())
    assert state.status == "completed" and state.iteration == 8
    assert state.row is not None and all(math.isfinite(v) for k, v in state.row.items() if k.startswith("loss/"))


def test_bf16_on_a_cpu_without_bf16_instructions_is_refused_naming_the_field(monkeypatch):
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    with pytest.raises(ConfigError) as info:
        build_run(validate_data(small()), source="cfg.toml")
    (issue,) = info.value.issues
    assert issue.path == "run.precision"
    assert "no bfloat16 instructions" in issue.message and "supported here: fp32" in issue.message


def test_fp16_is_refused_by_the_config_saying_what_is_allowed():
    with pytest.raises(ConfigError) as info:
        load_config("ppo_cartpole", ['run.precision="fp16"'])
    assert any(issue.path == "run.precision" and "fp32" in issue.message for issue in info.value.issues)
