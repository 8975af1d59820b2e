"""``rlcli tune``'s search: the inputs checked, the Optuna study opened (or joined), the trials run by
the pool of trial processes (:mod:`rlcli.tune.pool`) until the study holds enough, and the study
read back: its table, the best trial and its preset as ``best.toml``, the parameter importances.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlcli.config.dump import to_toml
from rlcli.config.errors import InputError
from rlcli.config.load import Override, load_config
from rlcli.config.presets import find_preset
from rlcli.config.schema import RunConfig
from rlcli.envs import import_env_packages
from rlcli.files import write_atomic
from rlcli.loggers import check_backends
from rlcli.tune import study as studies
from rlcli.tune.pool import Event, Pool
from rlcli.tune.space import Space, overrides, read_space


@dataclass
class TuneResult:
    """A search's outcome, read back from its study (every worker's trials)."""

    study: str
    storage: str
    folder: Path
    objective: str
    direction: str
    rows: list[studies.TrialRow] = field(default_factory=list)
    best: studies.TrialRow | None = None
    importances: dict[str, float] = field(default_factory=dict)
    best_toml: Path | None = None
    requeued: list[int] = field(default_factory=list)
    ran: int = 0
    """Trials this tuner ran (others may have run on other workers)."""
    failed: int = 0
    """Of those, the ones that failed."""
    stop_signal: str | None = None
    """"SIGINT" or "SIGTERM" when a signal stopped the search."""


def tune(
    preset: str | Path,
    space_file: Path,
    *,
    trials: int = 24,
    jobs: int = 1,
    timeout: float | None = None,
    study: str | None = None,
    storage: str | None = None,
    seeds: int = 1,
    sampler: str = "tpe",
    pruner: str = "median",
    objective: str = "return",
    out: Path | None = None,
    set_: Sequence[str | Override] = (),
    env_packages: Sequence[str] = (),
    requeue: bool = False,
    on_event: Event | None = None,
) -> TuneResult:
    """Search ``space_file``'s space over ``preset`` until the study holds ``trials`` finished trials
    (complete or pruned; a study another worker shares counts theirs), ``jobs`` trials at a time.

    Every input is checked before anything is written. A SIGINT or SIGTERM stops every running trial
    with a checkpoint and marks it failed (or pruned, when the pruner had asked) in the study.

    Raises:
        ConfigError: the preset, an override, the space or a flag is bad input (exit 2).
    """
    optuna = studies.import_optuna()
    _check_flags(trials, jobs, seeds, timeout, objective, sampler, pruner)
    import_env_packages(env_packages)
    plan = _plan(preset, space_file, set_, objective, study=study, storage=storage, out=out)
    the_study = _open_study(plan, objective, sampler, pruner, seeds)
    plan.folder.mkdir(parents=True, exist_ok=True)
    result = TuneResult(plan.name, plan.storage, plan.folder, objective, studies.direction(objective) or "maximize")
    grouping, parent = studies.grouping(plan.cfg.logger, the_study, plan.name)
    pool = Pool(
        the_study,
        optuna,
        plan.space,
        plan.preset,
        [*set_, *grouping],
        list(env_packages),
        seeds=[plan.cfg.run.seed + i for i in range(seeds)],
        jobs=jobs,
        trials=trials,
        objective=objective,
        report_every=plan.report_every,
        folder=plan.folder,
        requeue=requeue,
        on_event=on_event,
    )
    try:
        pool.run(timeout)
    finally:
        result.ran, result.requeued, result.failed = pool.ran, pool.requeued, pool.failed
        if pool.signals:
            result.stop_signal = signal.Signals(pool.signals[0]).name
    _read_back(result, the_study, plan.space, plan.preset, list(set_))
    if parent is not None:
        from rlcli.loggers.tracking import end_study_run

        best = None if result.best is None else {"value": result.best.value, "params": result.best.params}
        end_study_run(plan.cfg.logger, parent, best)
    return result


@dataclass(frozen=True)
class _Plan:
    """A search's inputs, each checked, and what follows from them; nothing is written yet."""

    preset: Path
    cfg: RunConfig
    space: Space
    budget: int
    """Frames (gradient steps, offline) of one seed of a trial."""
    report_every: int
    name: str
    folder: Path
    storage: str


def _plan(
    preset: str | Path,
    space_file: Path,
    set_: Sequence[str | Override],
    objective: str,
    *,
    study: str | None,
    storage: str | None,
    out: Path | None,
) -> _Plan:
    """The search's preset, config and space read and checked, its study's name, folder and storage."""
    path = find_preset(preset)
    cfg = load_config(path, set_)
    space = read_space(Path(space_file), cfg)
    check_backends(cfg.logger, source=str(path))
    if objective == "frames" and cfg.run.stop_at_return is None:
        raise InputError("--objective frames", "needs run.stop_at_return in the preset (or --set it)")
    group = studies.objective_group(objective)
    if group is not None:
        _check_group(cfg, group, objective, str(path))
    budget = cfg.data.total_steps if cfg.data is not None else cfg.collector.total_frames
    name = study or path.stem
    folder = Path(out or Path(cfg.run.output_dir) / "tune") / name
    url = storage or f"sqlite:///{(folder / 'study.db').resolve()}"
    return _Plan(path, cfg, space, budget, space.report_every or max(1, budget // 10), name, folder, url)


def _check_group(cfg, group: str, objective: str, source: str) -> None:
    """Raise an InputError unless ``cfg`` trains a team with a group named ``group``."""
    from rlcli.envs.teams import make_team_envs, team_kind

    if team_kind(cfg.env.id) is None:
        raise InputError(f"--objective {objective}", f"{cfg.env.id} is a single-agent env: its objective is return")
    import torch

    envs = make_team_envs(cfg.env, 1, seed=0, device=torch.device("cpu"), source=source, state=False)
    names = envs.layout.names
    envs.close()
    if group not in names:
        raise InputError(
            f"--objective {objective}", f"{cfg.env.id} has no group {group!r}; its groups: {', '.join(names)}"
        )


def _open_study(plan: _Plan, objective: str, sampler: str, pruner: str, seeds: int) -> Any:
    """The study of ``plan`` with its sampler and pruner, created or joined; a joined study's trials
    must have sampled each key from a distribution that this space continues."""
    startup = plan.space.startup_trials
    the_sampler = studies.make_sampler(sampler, startup_trials=startup)
    the_pruner = studies.make_pruner(
        pruner, report_every=plan.report_every, budget=plan.budget, seeds=seeds, startup_trials=startup
    )
    the_study = studies.open_study(
        plan.name,
        studies.open_storage(plan.storage),
        direction=studies.direction(objective) or "maximize",
        preset=str(plan.preset),
        objective=objective,
        sampler=the_sampler,
        pruner=the_pruner,
    )
    studies.check_space(the_study, list(plan.space.params), plan.name)
    return the_study


def _check_flags(
    trials: int, jobs: int, seeds: int, timeout: float | None, objective: str, sampler: str, pruner: str
) -> None:
    for flag, value in (("--trials", trials), ("--jobs", jobs), ("--seeds", seeds)):
        if value < 1:
            raise InputError(f"{flag} {value}", "must be at least 1")
    if timeout is not None and not timeout > 0:
        raise InputError(f"--timeout {timeout}", "must be a number of seconds > 0")
    if studies.direction(objective) is None:
        allowed = ", ".join([*studies.OBJECTIVES, f"{studies.GROUP_OBJECTIVE}<group> (a team run's group)"])
        raise InputError(f"--objective {objective}", f"unknown objective; allowed: {allowed}")
    if sampler not in studies.SAMPLERS:
        raise InputError(f"--sampler {sampler}", f"unknown sampler; allowed: {', '.join(studies.SAMPLERS)}")
    if pruner not in studies.PRUNERS:
        raise InputError(f"--pruner {pruner}", f"unknown pruner; allowed: {', '.join(studies.PRUNERS)}")


def show(study: str, storage: str) -> TuneResult:
    """An existing study read back, as :func:`tune` returns it at the end (``rlcli tune --show``)."""
    opened = studies.open_storage(storage)
    the_study = studies.load_existing(study, opened)
    objective = the_study.user_attrs.get("objective", "return")
    result = TuneResult(study, storage, Path("."), objective, the_study.direction.name.lower())
    result.rows = studies.rows(the_study)
    best = studies.best_trial(the_study)
    result.best = next((r for r in result.rows if best is not None and r.number == best.number), None)
    result.importances = studies.importances(the_study)
    return result


def _read_back(result: TuneResult, study: Any, space: Space, preset: Path, set_: list) -> None:
    """The table, the best trial, the importances and ``best.toml``."""
    result.rows = studies.rows(study)
    best = studies.best_trial(study)
    if best is None:
        return
    result.best = next(r for r in result.rows if r.number == best.number)
    result.importances = studies.importances(study)
    params = {p.key: p for p in space.params}
    values = {key: params[key].value_of(v) if key in params else v for key, v in best.params.items()}
    cfg = load_config(preset, [*set_, *overrides(values, best.number)])
    lines = [
        f"# rlcli tune: the best trial ({best.number}) of study {result.study!r} ({result.storage}),",
        f"# objective {result.objective} = {best.value:g}; the preset {preset} with these values:",
    ]
    lines += [f"#   {key} = {v}" for key, v in best.params.items()]
    result.best_toml = result.folder / "best.toml"
    write_atomic(result.best_toml, "\n".join(lines) + "\n\n" + to_toml(cfg))
