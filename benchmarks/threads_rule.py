"""The measurements behind ``run.threads = "auto"`` (``rlcli.runtime.threads``): where a second thread pays.

Two parts, each timed with 1 and with N torch threads (N: the physical cores, at most 2 by default) in
alternating rounds, medians:

1. **Sweep**: MLPs (17 inputs, two hidden layers of 64, 256 or 1024) and the Nature CNN at a range of
   batch sizes: a forward without gradients (acting) and a whole Adam step (forward, backward, step),
   each with its FLOPs as ``torch.utils.flop_counter`` counts them. The speed-up of N threads over one
   against the FLOPs of a call gives the thresholds (``ACT_FLOPS_PER_THREAD``,
   ``UPDATE_FLOPS_PER_THREAD``).
2. **Presets**: each preset's collect phase (``next_batch``) and update (``learn``) past its warm-up, with
   the FLOPs ``auto`` counted for it and the threads it chose; "right" says whether auto's choice was
   the faster one (within 3 %, either counts).

    python benchmarks/threads_rule.py [--presets ppo_cartpole sac_pendulum ...] [--rounds 3] [--skip-sweep]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from rlcli.bench.suites.options import short_warm_up
from rlcli.config.load import load_config
from rlcli.run import build_run
from rlcli.runtime.cores import physical_cores
from rlcli.timing import Timer

PRESETS = [
    "ppo_cartpole",
    "ppo_lunarlander",
    "ppo_lstm_cartpolenovel",
    "ppo_lstm_pendulumnovel",
    "ppo_taxi_masked",
    "sac_pendulum",
    "sac_mountaincarcontinuous",
    "sac_lunarlandercontinuous",
    "sac_halfcheetah",
    "redq_pendulum",
    "td3_pendulum",
    "td3_lunarlandercontinuous",
    "ddpg_lunarlandercontinuous",
    "dqn_cartpole",
    "dqn_acrobot",
    "dqn_lunarlander",
    "dqn_breakout",
    "ppo_breakout",
]


def median_time(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def sweep(threads: int, rounds: int) -> None:
    def mlp(width: int) -> torch.nn.Module:
        return torch.nn.Sequential(
            torch.nn.Linear(17, width), torch.nn.Tanh(), torch.nn.Linear(width, width), torch.nn.Tanh(),
            torch.nn.Linear(width, 1),
        )  # fmt: skip

    def cnn() -> torch.nn.Module:
        return torch.nn.Sequential(
            torch.nn.Conv2d(4, 32, 8, 4), torch.nn.ReLU(), torch.nn.Conv2d(32, 64, 4, 2), torch.nn.ReLU(),
            torch.nn.Conv2d(64, 64, 3, 1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(3136, 512),
            torch.nn.ReLU(), torch.nn.Linear(512, 4),
        )  # fmt: skip

    cases = [(f"mlp {w} x{b}", mlp(w), torch.randn(b, 17)) for w in (64, 256, 1024) for b in (8, 64, 256, 1024, 4096)]
    cases += [(f"cnn x{b}", cnn(), torch.rand(b, 4, 84, 84)) for b in (1, 8, 32, 256)]
    print(f"sweep: 1 vs {threads} threads (speed-up > 1: {threads} threads faster)")
    print(f"{'case':14} {'act MFLOP':>10} {'speed-up':>9} {'step MFLOP':>11} {'speed-up':>9}")
    for name, net, x in cases:
        optimizer = torch.optim.Adam(net.parameters())

        def act(net=net, x=x):
            with torch.no_grad():
                net(x)

        def step(net=net, x=x, optimizer=optimizer):
            optimizer.zero_grad()
            net(x).square().mean().backward()
            optimizer.step()

        row = [name]
        for fn in (act, step):
            with FlopCounterMode(display=False) as counter:
                fn()
            reps = max(5, min(200, int(0.2 / max(median_time(fn, 3), 1e-6))))
            timed: dict[int, list[float]] = {1: [], threads: []}
            for r in range(rounds):
                for t in (1, threads) if r % 2 == 0 else (threads, 1):
                    torch.set_num_threads(t)
                    timed[t].append(median_time(fn, reps))
            row += [counter.get_total_flops() / 1e6, statistics.median(timed[1]) / statistics.median(timed[threads])]
        print(f"{row[0]:14} {row[1]:10.2f} {row[2]:9.2f} {row[3]:11.2f} {row[4]:9.2f}", flush=True)


def preset(name: str, threads: int, rounds: int) -> None:
    cfg = short_warm_up(load_config(name, ["run.device=cpu", "timing.enabled=false"]))
    run = build_run(cfg)
    plan = run.threads
    timer = Timer(run.device)
    torch.set_num_threads(1)
    for _ in range(2000):
        if any(key.startswith("loss/") for key in run.algo.learn(run.source.next_batch(timer), timer)):
            break
    timed: dict[tuple[str, int], list[float]] = {}
    for r in range(rounds):
        for t in (1, threads) if r % 2 == 0 else (threads, 1):
            torch.set_num_threads(t)
            started = time.perf_counter()
            batch = run.source.next_batch(timer)
            collected = time.perf_counter()
            run.algo.learn(batch, timer)
            timed.setdefault(("collect", t), []).append(collected - started)
            timed.setdefault(("update", t), []).append(time.perf_counter() - collected)
    run.close()
    cells = []
    for phase, chosen, flops in (("collect", plan.act, plan.act_flops), ("update", plan.update, plan.update_flops)):
        one, many = (statistics.median(timed[(phase, t)]) * 1000 for t in (1, threads))
        faster = 1 if one <= many else threads
        right = chosen == faster or abs(one - many) <= 0.03 * min(one, many)
        cells.append(f"{flops / 1e6:9.2f} {one:9.1f} {many:9.1f} {chosen:6d} {'yes' if right else 'NO':>5}")
    print(f"{name:28} " + " | ".join(cells), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="*", default=PRESETS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=min(2, physical_cores()))
    parser.add_argument("--skip-sweep", action="store_true")
    args = parser.parse_args()
    torch.set_flush_denormal(True)
    if not args.skip_sweep:
        sweep(args.threads, args.rounds)
    n = args.threads
    print(f"\npresets: ms per iteration on 1 and {n} threads, what auto chose, whether it chose the faster")
    head = f"{'MFLOP':>9} {'1 thr':>9} {f'{n} thr':>9} {'auto':>6} {'right':>5}"
    print(f"{'preset':28} {'collect: ' + head} | {'update: ' + head}")
    for name in args.presets:
        preset(name, n, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
