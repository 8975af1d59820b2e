"""examples/: play_onnx.py plays an exported policy in a fresh venv holding numpy, gymnasium and
onnxruntime only (no torch, no rlcli), and its episodes are those the run's own policy plays."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import pytest
import torch

from rlcli.play.export import deployed, export_policy
from rlcli.trainer.checkpoint_folder import find_checkpoint
from support.paths import ROOT

EXAMPLE = ROOT / "examples" / "play_onnx.py"


@pytest.mark.integration
def test_play_onnx_runs_without_torch_and_gives_the_runs_own_returns(off_policy_run, tmp_path):
    policy = export_policy(off_policy_run.folder, format="onnx", out=tmp_path / "policy.onnx").path
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    versions = {name: __import__(name).__version__ for name in ("numpy", "gymnasium", "onnxruntime")}
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", *(f"{name}=={v}" for name, v in versions.items())],
        check=True,
        capture_output=True,
    )
    missing = subprocess.run([python, "-c", "import torch"], capture_output=True, text=True)
    assert missing.returncode != 0 and "No module named 'torch'" in missing.stderr
    result = subprocess.run(
        [python, EXAMPLE, policy, "--episodes", "2", "--seed", "7"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    episodes = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["seed"] for e in episodes] == [7, 8] and all(e["length"] == 200 for e in episodes)
    # The same episodes played by the run's eager policy in this process.
    _, weights = find_checkpoint(off_policy_run.folder)
    module, _, _ = deployed(off_policy_run.folder, weights)
    env = gym.make("Pendulum-v1")
    for episode in episodes:
        observation, _ = env.reset(seed=episode["seed"])
        total, done = 0.0, False
        while not done:
            with torch.no_grad():
                action = module(torch.as_tensor(observation)[None])[0].numpy()
            observation, reward, terminated, truncated, _ = env.step(action)
            total, done = total + float(reward), terminated or truncated
        assert episode["return"] == pytest.approx(total, abs=1e-3)
    env.close()
