"""The suite of data-parallel training's own cost (``distributed``): a gradient's all-reduce between
this process and a partner rank (:mod:`rlcli.bench.partner`)."""

from __future__ import annotations

import torch

from rlcli.bench.measure import Case
from rlcli.bench.suites.options import BenchOptions, SuiteOutput, preset_configs
from rlcli.run import build_run


def distributed_suite(opts: BenchOptions) -> SuiteOutput:
    """The gloo all-reduce of one PPO gradient (ppo_cartpole's parameter count) between this
    process and a partner process on the same machine: what each data-parallel step adds."""
    import socket
    import subprocess
    import sys

    import torch.distributed as dist

    if opts.device.type != "cpu" or dist.is_initialized():
        return [], []
    cfg = preset_configs(opts)["ppo_cartpole"]
    run = build_run(cfg)
    agent = run.algo.agent
    # PPO's agent is an ActorCritic module (the Agent protocol names only what evaluation calls).
    assert isinstance(agent, torch.nn.Module)
    numel = sum(p.numel() for p in agent.parameters())
    run.close()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    # The partner rank matches this process's calls until it is killed at the end. Its own session: a
    # Ctrl-C at the terminal reaches the bench alone, which ends the partner on its way out.
    partner = subprocess.Popen(
        [sys.executable, "-m", "rlcli.bench.partner", address, str(numel)],
        start_new_session=True,
        stderr=subprocess.DEVNULL,
    )
    try:
        dist.init_process_group("gloo", rank=0, world_size=2, init_method=address)
    except BaseException:
        partner.kill()
        partner.wait()
        raise
    buf, calls = torch.ones(numel), 100

    def reduce() -> None:
        dist.all_reduce(torch.tensor([float(calls)]))
        for _ in range(calls):
            dist.all_reduce(buf)

    def close() -> None:
        # Killed rather than told to stop: a stop signal may have cut a reduce short, with the partner
        # waiting inside a collective that this process will never join.
        partner.kill()
        partner.wait()
        dist.destroy_process_group()

    return [Case("distributed", "gloo_all_reduce", {"numel": numel, "ranks": 2}, "calls/s", calls, reduce, close)], []
