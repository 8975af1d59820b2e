"""rlcli's TD(0), TD(1) and TD(lambda) targets beside TorchRL's: the largest difference and the speed.

The peer check of ``rlcli.learning.advantages`` (issue 20): the same random ``[T, N]`` rollouts, with
terminations and truncations, go through rlcli's ``td0``, ``td1`` and ``td_lambda`` and through
TorchRL's ``td0_return_estimate``, ``td1_return_estimate`` and ``td_lambda_return_estimate``
(``torchrl.objectives.value.functional``; the ``vec_`` variants of the last two are timed as well).

Conventions: rlcli is time-major ``[T, N]`` with ``terminated`` and ``truncated`` apart; TorchRL
takes ``[N, T, 1]`` (time at dim -2) with ``done = terminated | truncated`` and ``terminated``.
Both bootstrap from ``next_value`` at a truncation and at the rollout's last step, and not at a
termination. The figures:

- ``max_abs_err``: the largest |rlcli - TorchRL| over every target, both on float32 inputs;
  ``max_abs_err_f64`` is against TorchRL on float64 inputs (rlcli sums in float64 and returns
  float32, so this is rlcli's own rounding).
- ``time_ratio``: the median over ``--repeat`` calls of rlcli's time over TorchRL's (below 1:
  rlcli is faster), both on the CPU with one torch thread, inputs laid out beforehand in each
  library's own convention (the transposes are not timed).

It runs in a venv of its own (TorchRL is never a dependency of rlcli), with rlcli's ``src`` on
the path; versions in requirements-torchrl.txt:

    python3.11 -m venv /tmp/peer-torchrl
    /tmp/peer-torchrl/bin/pip install -r benchmarks/peers/requirements-torchrl.txt
    PYTHONPATH=src /tmp/peer-torchrl/bin/python benchmarks/peers/torchrl_value_targets.py

Prints a table, then one JSON line with every figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from importlib.metadata import version

import torch
from torchrl.objectives.value import functional as trl

from rlcli.learning.advantages import td0, td1, td_lambda

SHAPES = ((128, 64), (2048, 8))


def rollout(steps: int, envs: int, seed: int, *, p_term: float, p_trunc: float) -> dict[str, torch.Tensor]:
    """Random rewards and values ([T, N] float32) with terminations and truncations ([T, N] bool)."""
    g = torch.Generator().manual_seed(seed)
    terminated = torch.rand(steps, envs, generator=g) < p_term
    truncated = (torch.rand(steps, envs, generator=g) < p_trunc) & ~terminated
    return {
        "reward": torch.randn(steps, envs, generator=g),
        "value": torch.randn(steps, envs, generator=g),
        "next_value": torch.randn(steps, envs, generator=g),
        "terminated": terminated,
        "truncated": truncated,
    }


def torchrl_layout(data: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """TorchRL's [N, T, 1] tensors of a rollout: ``done`` is either end, ``terminated`` the task's."""

    def lay(x):
        return x.t().unsqueeze(-1).contiguous()

    return {
        "reward": lay(data["reward"]).to(dtype),
        "next_state_value": lay(data["next_value"]).to(dtype),
        "done": lay(data["terminated"] | data["truncated"]),
        "terminated": lay(data["terminated"]),
    }


def pairs(gamma: float, lam: float):
    """(name, rlcli's target of a [T, N] rollout, TorchRL's of its [N, T, 1] layout) for each estimator."""

    def ours(function, **extra):
        def run(d):
            return function(
                d["reward"], d["value"], d["next_value"], d["terminated"], d["truncated"], gamma=gamma, **extra
            )[1]

        return run

    return (
        (
            "td0",
            ours(td0),
            lambda t: trl.td0_return_estimate(gamma, t["next_state_value"], t["reward"], t["terminated"]),
        ),
        (
            "td1",
            ours(td1),
            lambda t: trl.td1_return_estimate(gamma, t["next_state_value"], t["reward"], t["done"], t["terminated"]),
        ),
        (
            "td1 (vec_)",
            ours(td1),
            lambda t: trl.vec_td1_return_estimate(
                gamma, t["next_state_value"], t["reward"], t["done"], t["terminated"]
            ),
        ),
        (
            "td_lambda",
            ours(td_lambda, lam=lam),
            lambda t: trl.td_lambda_return_estimate(
                gamma, lam, t["next_state_value"], t["reward"], t["done"], t["terminated"]
            ),
        ),
        (
            "td_lambda (vec_)",
            ours(td_lambda, lam=lam),
            lambda t: trl.vec_td_lambda_return_estimate(
                gamma, lam, t["next_state_value"], t["reward"], t["done"], t["terminated"]
            ),
        ),
    )


def seconds(function, argument, repeat: int) -> list[float]:
    """Wall time of each of ``repeat`` calls, after three untimed ones."""
    for _ in range(3):
        function(argument)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function(argument)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed calls of each function (default 30)")
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--lam", type=float, default=0.95)
    parser.add_argument("--seeds", type=int, default=3, help="random rollouts per shape for the errors (default 3)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    results = []
    for steps, envs in SHAPES:
        for name, ours, theirs in pairs(args.gamma, args.lam):
            error = error64 = 0.0
            for seed in range(args.seeds):
                data = rollout(steps, envs, seed, p_term=0.02, p_trunc=0.01)
                mine = ours(data)
                for dtype in (torch.float32, torch.float64):
                    other = theirs(torchrl_layout(data, dtype)).squeeze(-1).t()
                    gap = float((mine.double() - other.double()).abs().max())
                    if dtype is torch.float32:
                        error = max(error, gap)
                    else:
                        error64 = max(error64, gap)
            data = rollout(steps, envs, 0, p_term=0.02, p_trunc=0.01)
            mine_s = statistics.median(seconds(ours, data, args.repeat))
            theirs_s = statistics.median(seconds(theirs, torchrl_layout(data, torch.float32), args.repeat))
            results.append(
                {
                    "estimator": name,
                    "T": steps,
                    "N": envs,
                    "max_abs_err": error,
                    "max_abs_err_f64": error64,
                    "rlcli_ms": mine_s * 1e3,
                    "torchrl_ms": theirs_s * 1e3,
                    "time_ratio": mine_s / theirs_s,
                }
            )
    print(
        f"{'estimator':18} {'T':>5} {'N':>3} {'max|err|':>9} {'vs f64':>9} {'rlcli ms':>9} {'torchrl ms':>10} "
        f"{'rlcli/torchrl':>13}"
    )
    for r in results:
        print(
            f"{r['estimator']:18} {r['T']:>5} {r['N']:>3} {r['max_abs_err']:9.2e} {r['max_abs_err_f64']:9.2e} "
            f"{r['rlcli_ms']:9.3f} {r['torchrl_ms']:10.3f} {r['time_ratio']:13.3f}"
        )
    print(
        json.dumps(
            {
                "torch": torch.__version__,
                "torchrl": version("torchrl"),
                "threads": 1,
                "gamma": args.gamma,
                "lam": args.lam,
                "repeat": args.repeat,
                "results": results,
            }
        )
    )


if __name__ == "__main__":
    main()
