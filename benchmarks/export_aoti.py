"""A pt2 file of ``rlcli export`` compiled ahead of time with AOTInductor, as a deployment would: for each
preset's untrained agent (its observation normalization fitted to observations of its env), export it to
pt2 with a dynamic batch, compile the loaded program with ``torch._inductor.aoti_compile_and_package``,
load the package and compare its actions with the eager policy's on 200 recorded observations. Needs a C++
compiler (not a test: CI's machine promises none). Prints the compile time and the largest difference.

    python benchmarks/export_aoti.py                      # ppo_cartpole sac_pendulum
    python benchmarks/export_aoti.py --presets ppo_breakout
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from rlcli.config.load import load_config
from rlcli.envs.random_play import random_observations
from rlcli.play.export import deployed_untrained, examples_for, write_file

ROWS = 200


def compiled_gap(preset: str, scratch: Path) -> dict:
    cfg = load_config(preset)
    module, observation_space, action_space = deployed_untrained(cfg, source=preset)
    if module.keys is not None or module.masked or module.remembers:
        raise SystemExit(f"{preset}: this script feeds a single observation input only")
    obs = torch.as_tensor(random_observations(cfg.env, ROWS))
    module.agent.obs_norm.observe(obs[None])
    out = scratch / f"{preset}.pt2"
    write_file(module, examples_for(module, observation_space, action_space), out, {}, format="pt2", dynamic=True)
    start = time.perf_counter()
    package = torch._inductor.aoti_compile_and_package(
        torch.export.load(str(out)), package_path=str(scratch / "aoti.pt2")
    )
    seconds = time.perf_counter() - start
    compiled = torch._inductor.aoti_load_package(package)
    with torch.no_grad():
        eager = module(obs)
        played = compiled(obs)
    played = played[0] if isinstance(played, (list, tuple)) else played
    return {
        "preset": preset,
        "compile_s": round(seconds, 1),
        "largest_action_difference": float((played.double() - eager.double()).abs().max()),
        "equal": bool(torch.equal(played, eager)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="*", default=["ppo_cartpole", "sac_pendulum"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rlcli-aoti-") as scratch:
        for preset in args.presets:
            print(compiled_gap(preset, Path(scratch)), flush=True)


if __name__ == "__main__":
    main()
