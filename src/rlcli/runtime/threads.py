"""``run.threads``: how many torch threads each phase of a run computes on.

``"auto"`` decides once, at build, from what the machine has and what each phase costs in
floating-point operations (FLOPs), by one rule for every algorithm:

- **acting** (the collector's and the evaluations' policy calls): the FLOPs of one call on the
  run's envs, counted with :class:`torch.utils.flop_counter.FlopCounterMode` on one policy
  forward;
- **the update**: the FLOPs of one gradient step, estimated as 3 (forward and backward) x the
  rows a step takes (``algo.update_batch``) x the policy's FLOPs per row x the ratio of all the
  agent's weights to those acting touches (critics, targets: SAC's is about 5, PPO's 1). A
  memory core's FLOPs are left out: an update runs it one time step after another, each step a
  small batch that a second thread does not speed up (measured: ``ppo_lstm_cartpolenovel``'s
  update, 0.96x on two threads).

A phase gets one thread per :data:`ACT_FLOPS_PER_THREAD` (acting) or
:data:`UPDATE_FLOPS_PER_THREAD` (a gradient step) of its work, between 1 and the physical cores
this process may use (a torchrun rank: its share of the node's). Below two such shares one
thread is fastest: a second thread's hand-off costs more than it saves on a small network.

Why a rule by FLOPs, not a calibration that times the first iterations: the thread count
changes float results (a matmul split over two threads sums in another order), so a count
chosen by timing would make two runs of one config on one machine differ whenever the timing
noise tipped the choice. The rule gives the same count every time on the same machine, and
``run.json`` records it.

The thresholds come from ``benchmarks/threads_rule.py`` (the speed-up of two threads over one
for MLPs and the Nature CNN over a range of batch sizes, and each preset's phases), on a
2-core Xeon (AMX): a forward gained from 2 threads from about 9 MFLOP a call (1.08x; 1.36x at
10.8) and lost at 2.7 (0.88x); presets' gradient steps gained from 86 MFLOP (DQN CartPole, 1.12x)
and lost at 40 (TD3 Pendulum, 0.82x) and 34 (SAC Pendulum, 0.97x).

On CUDA the networks do not run on CPU threads: one thread for every phase.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from rlcli.runtime.cores import physical_cores

ACT_FLOPS_PER_THREAD = 5e6
"""FLOPs of one policy call that justify one more thread (two threads from 10 MFLOP)."""
UPDATE_FLOPS_PER_THREAD = 40e6
"""FLOPs of one gradient step (forward and backward) that justify one more thread (two from 80 MFLOP)."""


@dataclass(frozen=True)
class ThreadPlan:
    """The torch threads of each phase, and why."""

    setting: int | str
    """``run.threads`` as configured: ``"auto"`` or a number."""
    act: int
    """Threads of the policy calls: collection, evaluation."""
    update: int
    """Threads of the update (``learn``)."""
    cores: int
    """The physical cores this process may use."""
    act_flops: float | None = None
    """FLOPs of one policy call on the run's envs (``auto`` only)."""
    update_flops: float | None = None
    """Estimated FLOPs of one gradient step, forward and backward (``auto`` only)."""

    def acting(self) -> None:
        """Set torch's threads for policy calls."""
        _set(self.act)

    def updating(self) -> None:
        """Set torch's threads for the update."""
        _set(self.update)

    def describe(self) -> str:
        """One line for the start of a run and ``validate --build``."""
        if self.setting != "auto":
            return f"threads {self.act} (run.threads)"
        if self.act_flops is None:
            return f"threads auto: {self.act} (CUDA runs the networks)"
        return (
            f"threads auto: acting {self.act} ({_flops(self.act_flops)} a call), "
            f"update {self.update} ({_flops(self.update_flops)} a gradient step), of {self.cores} cores"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "setting": self.setting,
            "act": self.act,
            "update": self.update,
            "cores": self.cores,
            "act_flops": self.act_flops,
            "update_flops": self.update_flops,
        }


def _set(threads: int) -> None:
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def _flops(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, scale in (("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} FLOP"


def fixed(threads: int) -> ThreadPlan:
    """The plan of a pinned ``run.threads = N``: N threads in every phase."""
    return ThreadPlan(threads, threads, threads, physical_cores())


def plan(
    setting: int | str, agent: torch.nn.Module, observation: Any, *, rows: int, device: torch.device
) -> ThreadPlan:
    """The threads of each phase for ``run.threads = setting``: ``auto`` counts the FLOPs of one policy
    call of ``agent`` on ``observation`` (a batch as the run's envs give it, on ``device``) and
    estimates a gradient step on ``rows`` rows from it (see the module's docstring)."""
    if setting != "auto":
        return fixed(int(setting))
    cores = physical_cores()
    if device.type == "cuda":
        return ThreadPlan("auto", 1, 1, cores)
    act_flops, per_row, touched, total = _policy_call(agent, observation)
    update_flops = 3.0 * rows * per_row * (total / max(touched, 1))
    return ThreadPlan(
        "auto",
        _threads(act_flops, ACT_FLOPS_PER_THREAD, cores),
        _threads(update_flops, UPDATE_FLOPS_PER_THREAD, cores),
        cores,
        act_flops,
        update_flops,
    )


def _threads(flops: float, per_thread: float, cores: int) -> int:
    return int(min(cores, max(1, flops // per_thread)))


def _policy_call(agent: torch.nn.Module, observation: Any) -> tuple[float, float, int, int]:
    """FLOPs of ``agent.actions`` on ``observation``; the same per row, without a memory core's (an update
    runs a core one time step after another, each step a small batch that gains nothing from more
    threads); the weights the call touched; and all the agent's weights."""
    from rlcli.carry import Acts, Carry
    from rlcli.models.memory import MemoryCore

    rows = observation.shape[0]
    called: set[int] = set()
    recurrent: list[float] = []
    inner: list[FlopCounterMode] = []

    def enter_core(module, args):
        inner.append(FlopCounterMode(display=False))
        inner[-1].__enter__()

    def leave_core(module, args, out):
        counter = inner.pop()
        counter.__exit__(None, None, None)
        recurrent.append(float(counter.get_total_flops()))

    handles = [
        module.register_forward_hook(lambda module, args, out: called.add(id(module))) for module in agent.modules()
    ]
    for module in agent.modules():
        if isinstance(module, MemoryCore):
            handles += [module.register_forward_pre_hook(enter_core), module.register_forward_hook(leave_core)]
    assert isinstance(agent, Acts), "an agent has actions"
    generator = torch.Generator(device=observation.device).manual_seed(0)
    # A team's agent makes its own carry (one per group); any other agent's is a Carry of its memory.
    make_carry = getattr(agent, "carry", None)
    carry = make_carry(rows, observation.device) if callable(make_carry) else Carry.of(agent, rows, observation.device)
    try:
        with FlopCounterMode(display=False) as counter:
            agent.actions(observation, deterministic=True, generator=generator, carry=carry)
    finally:
        for handle in handles:
            handle.remove()
    touched = sum(
        p.numel() for module in agent.modules() if id(module) in called for p in module.parameters(recurse=False)
    )
    flops = float(counter.get_total_flops())
    return flops, (flops - sum(recurrent)) / rows, touched, sum(p.numel() for p in agent.parameters())
