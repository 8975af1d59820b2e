"""``rlcli train --nproc N``: the checks made once before any rank starts, then the ranks, started
as local processes through torchrun's own launcher (the elastic agent of ``torch.distributed.run``).

Each rank then joins the process group of :mod:`rlcli.runtime.distributed` from the environment the
launcher gives it; nothing here runs inside a rank.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlcli.config.errors import ConfigError, ConfigIssue, InputError
from rlcli.config.load import Override, load_config
from rlcli.config.presets import find_preset
from rlcli.config.ranks import rank_problems
from rlcli.envs import import_env_packages
from rlcli.loggers import check_backends
from rlcli.runtime.devices import resolve_device
from rlcli.runtime.distributed import PIN_CORES, RANK_LOST_STATUS, launched


class RankFailure(Exception):
    """A rank of a launched run ended badly: ``rank`` and its ``exitcode`` (negative: a signal)."""

    def __init__(self, rank: int, exitcode: int):
        self.rank, self.exitcode = rank, exitcode
        if exitcode < 0:
            try:
                how = f"was killed by {signal.Signals(-exitcode).name}"
            except ValueError:
                how = f"was killed by signal {-exitcode}"
        else:
            how = f"exited with status {exitcode}"
        super().__init__(f"rank {rank} {how}; the others were stopped")


class LaunchInterrupted(Exception):
    """The launcher got SIGINT or SIGTERM: the ranks were told to stop and have (each saves a
    checkpoint, as one process does). ``signum`` is the signal."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"{signal.Signals(signum).name}: the ranks stopped")


def train_ranks(
    nproc: int,
    preset: str,
    *,
    resume: Path | None = None,
    overrides: Sequence[str | Override] = (),
    env_packages: Sequence[str] = (),
    quiet: bool = False,
) -> None:
    """Check the config of ``preset`` (with ``overrides``) for ``nproc`` ranks here, then train it
    as ``nproc`` local ranks, each ``rlcli train`` with the same arguments.

    Raises:
        ConfigError: the config does not suit ``nproc`` ranks, or this machine (an InputError for
            a bad ``nproc``, too many CUDA ranks, or a ``resume`` folder trained by another number).
        RankFailure: a rank ended with a non-zero status or a signal.
        LaunchInterrupted: SIGINT or SIGTERM reached the launcher; the ranks have stopped.
    """
    check_ranks(nproc, preset, resume=resume, overrides=overrides, env_packages=env_packages)
    launch(nproc, _rank_args(preset, resume=resume, overrides=overrides, env_packages=env_packages, quiet=quiet))


def check_ranks(
    nproc: int,
    preset: str,
    *,
    resume: Path | None = None,
    overrides: Sequence[str | Override] = (),
    env_packages: Sequence[str] = (),
) -> None:
    """What every rank would find out for itself, said once, before any rank starts.

    Raises:
        ConfigError: as :func:`train_ranks`.
    """
    if nproc < 1:
        raise InputError(f"--nproc {nproc}", "must be at least 1")
    if launched():
        raise InputError(f"--nproc {nproc}", "this process is already a rank started by torchrun")
    import_env_packages(env_packages)
    cfg = load_config(find_preset(preset), overrides)
    problems = rank_problems(cfg, nproc)
    if problems:
        raise ConfigError(
            preset, [ConfigIssue(f"{message} (--nproc {nproc})", path=path) for path, message in problems]
        )
    resolve_device(cfg.run.device, source=preset)
    check_backends(cfg.logger, source=preset)
    _check_cuda_ranks(cfg.run.device, nproc)
    if resume is not None:
        _check_resume_ranks(resume, nproc)


def _check_resume_ranks(run_dir: Path, nproc: int) -> None:
    """Raise an InputError when the run was trained by another number of ranks than ``nproc``."""
    try:
        saved = json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("world_size", 1)
    except (OSError, ValueError, AttributeError):
        # Without run.json the ranks find out from the checkpoint itself.
        return
    if saved != nproc:
        raise InputError(
            f"--nproc {nproc}",
            f"{run_dir} was trained by {saved} rank(s); each rank continues "
            f"its own envs and replay buffer, so resume it with --nproc {saved}",
        )


def _check_cuda_ranks(device: str, nproc: int) -> None:
    """Raise an InputError when a CUDA run asks for more ranks than this machine has devices."""
    if not device.startswith("cuda") and device != "auto":
        return
    import torch

    if not torch.cuda.is_available():
        return
    count = torch.cuda.device_count()
    if nproc > count:
        raise InputError(
            f"--nproc {nproc}",
            f"a CUDA run takes one device per rank and this machine has "
            f"{count}; use --nproc {count} or less, or --device cpu",
        )


def _rank_args(
    preset: str,
    *,
    resume: Path | None = None,
    overrides: Sequence[str | Override] = (),
    env_packages: Sequence[str] = (),
    quiet: bool = False,
) -> list[str]:
    """The ``rlcli`` arguments of each rank: ``train`` with the launcher's own run and flags."""
    args = ["train", *(["--resume", str(resume)] if resume is not None else [preset])]
    for item in overrides:
        args += ["--set", item.text if isinstance(item, Override) else item]
    for name in env_packages:
        args += ["--env-package", name]
    if quiet:
        args.append("--quiet")
    return args


def launch(nproc: int, args: list[str]) -> None:
    """Run ``rlcli ARGS`` as ``nproc`` local ranks through torchrun's own launcher (the elastic
    agent of ``torch.distributed.run``, standalone rendezvous on this machine, no restarts).

    Each rank is ``python -m rlcli ARGS`` with torchrun's ``RANK``, ``WORLD_SIZE`` and
    rendezvous variables, as ``torchrun --standalone --nproc-per-node N -m rlcli ARGS`` would start it.

    Raises:
        RankFailure: a rank ended with a non-zero status or a signal (the first to fail on its
            own, not one the agent stopped because another had failed).
        LaunchInterrupted: SIGINT or SIGTERM reached the launcher; the ranks have stopped.
    """
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    # The ranks of one machine each get a core of their own (the launch is ours, so the machine is).
    os.environ[PIN_CORES] = "1"
    options: dict[str, Any] = {}
    # Ranks told to stop finish their iteration and checkpoint before they exit (torch >= 2.7 lets
    # the agent wait that long; older ones wait their own default).
    if "shutdown_timeout" in {f.name for f in dataclasses.fields(LaunchConfig)}:
        options["shutdown_timeout"] = 300
    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=nproc,
        run_id=f"rlcli-{uuid.uuid4().hex[:8]}",
        rdzv_backend="c10d",
        rdzv_endpoint="localhost:0",
        max_restarts=0,
        monitor_interval=0.1,
        **options,
    )
    try:
        elastic_launch(config, entrypoint=sys.executable)("-m", "rlcli", *args)
    except SignalException as exc:
        raise LaunchInterrupted(int(exc.sigval)) from None
    except ChildFailedError as exc:
        failures = list(exc.failures.items())
        # The agent stops the other ranks with SIGTERM once one has failed: the cause is the first
        # failure that was not one of those.
        own = [(rank, f) for rank, f in failures if f.exitcode != -signal.SIGTERM] or failures
        # A rank that lost its peers is a consequence; failure times are whole seconds, so the order
        # of two ranks failing together is not known from them.
        rank, failure = min(own, key=lambda item: (item[1].exitcode == RANK_LOST_STATUS, item[1].timestamp, item[0]))
        raise RankFailure(rank, failure.exitcode) from None
