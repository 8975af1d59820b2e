"""The cores a process may compute on, and each one's share when rlcli runs several processes side by
side; torch-free, so that the commands that only start processes (``--seeds``, ``tune``) stay light."""

from __future__ import annotations

import os
from pathlib import Path


def physical_cores() -> int:
    """The physical cores this process may compute on: its CPU affinity with SMT siblings counted once,
    capped by ``OMP_NUM_THREADS`` where that is set (torchrun sets 1 for each rank; ``--jobs`` gives each
    child process its share: :func:`share_for_jobs`)."""
    cap = _omp_threads()
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return min(cap, max(1, os.cpu_count() or 1))
    cores = set()
    for cpu in cpus:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            package = (topology / "physical_package_id").read_text().strip()
            core = (topology / "core_id").read_text().strip()
        except OSError:
            return min(cap, len(cpus))
        cores.add((package, core))
    return min(cap, max(1, len(cores)))


def _omp_threads() -> int:
    """``OMP_NUM_THREADS`` as a count (its first level), or no cap when it is unset or not a count."""
    try:
        value = int(os.environ.get("OMP_NUM_THREADS", "").split(",")[0])
    except ValueError:
        return 1 << 30
    return value if value >= 1 else 1 << 30


def share_for_jobs(jobs: int) -> dict[str, str]:
    """The environment of one of ``jobs`` rlcli processes run side by side (``--seeds --jobs``, ``tune
    --jobs``): ``OMP_NUM_THREADS`` at its share of the cores, so that their ``auto`` threads do not
    outnumber the cores (two processes of two threads on two cores run slower than of one each);
    a value the user set is kept."""
    if "OMP_NUM_THREADS" in os.environ:
        return {}
    return {"OMP_NUM_THREADS": str(max(1, physical_cores() // max(1, jobs)))}
