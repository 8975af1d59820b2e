"""The suite of exported policies (``rlcli export``): for an MLP preset of each action kind and a CNN preset,
the latency of one observation (batch 1) and the throughput of 256, through the eager policy, the pt2 file
(``torch.export.load``) and the ONNX file (onnxruntime, one thread), each file's slowdown against eager."""

from __future__ import annotations

import torch

from rlcli.bench.measure import Case, Ratio
from rlcli.bench.suites.options import BenchOptions, SuiteOutput
from rlcli.config.load import load_config

PRESETS = ("ppo_cartpole", "sac_pendulum", "ppo_breakout")
"""Discrete and squashed-Gaussian MLPs, and Atari's CNN (left out where ale-py is not installed)."""


def export_suite(opts: BenchOptions) -> SuiteOutput:
    """Each preset's deterministic policy at batch 1 and 256: eager, pt2 and (with the export extra) onnx."""
    cases: list[Case] = []
    ratios: list[Ratio] = []
    for preset in PRESETS:
        built = _deployed(opts, preset)
        if built is None:
            continue
        module, examples = built
        players = {"eager": module, **_files(opts, preset, module, examples)}
        for rows in (1, 256):
            inputs = tuple(example[:1].expand(rows, *example.shape[1:]).contiguous() for example in examples)
            params = {"preset": preset, "batch": rows}
            keys = {}
            for name, play in players.items():
                case = Case("export", f"{name}.actions", params, "calls/s", 1, _call(play, inputs))
                cases.append(case)
                keys[name] = case.key
            for name in players.keys() - {"eager"}:
                ratios.append(
                    Ratio("export", f"{name}.slowdown_vs_eager", params, "slowdown", keys["eager"], keys[name])
                )
    return cases, ratios


def _deployed(opts: BenchOptions, preset: str):
    """(The preset's untrained policy as :class:`rlcli.play.export.DeployedPolicy` on the CPU, example inputs), or
    None where its env cannot be made here."""
    import gymnasium as gym

    from rlcli.play.export import deployed_untrained, examples_for

    cfg = load_config(preset, ["timing.enabled=false", opts.threads_setting])
    try:
        module, observation_space, action_space = deployed_untrained(cfg, source=preset)
    except (gym.error.Error, ImportError):
        return None
    return module, examples_for(module, observation_space, action_space)


def _files(opts: BenchOptions, preset: str, module, examples) -> dict:
    """The pt2 and (with the export extra) onnx files of ``module``, each as its runtime's call of the
    file's inputs."""
    from rlcli.play.export import write_file
    from rlcli.play.policy_file import opened

    found = {}
    for fmt in ("pt2", "onnx") if _onnx_available() else ("pt2",):
        out = opts.scratch / f"{preset}.{fmt}"
        write_file(module, examples, out, {"inputs": module.input_names}, format=fmt, dynamic=True)
        found[fmt] = opened(out)[1]
    return found


def _call(play, inputs):
    if isinstance(play, torch.nn.Module):

        def eager():
            with torch.no_grad():
                return play(*inputs)

        return eager
    return lambda: play(list(inputs))


def _onnx_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError:
        return False
    return True
