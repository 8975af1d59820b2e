"""Optuna's side of ``rlcli tune``: the storage (embedded SQLite by default, any Optuna RDB URL, or a
journal file), the samplers and pruners by name, the study (created, or joined and checked), stale
trials of a tuner that died, and what is read back from a study: its trials, the best one and the
parameter importances.

``optuna`` is the ``tune`` extra; only this package imports it, and only when ``rlcli tune`` runs.
"""

from __future__ import annotations

import datetime
import json
import math
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlcli.config.errors import InputError
from rlcli.config.load import Override

EXTRA = "tune"
HEARTBEAT_S = 2
"""Seconds between two heartbeats of a running trial (RDB storages)."""
GRACE_S = 10
"""Seconds without a heartbeat after which a RUNNING trial is taken for one whose tuner died."""

OBJECTIVES = {"return": "maximize", "frames": "minimize"}
"""``--objective``: the mean return of the last evaluation (the rolling training return without
``[eval]``), or the frames to ``run.stop_at_return`` (the whole budget when unsolved); each averaged
over the trial's seeds. The direction follows from it."""
GROUP_OBJECTIVE = "return/"
"""``--objective return/<group>``: a team run's named group's return, maximized (``return`` is the team's, the
sum over its groups)."""


def direction(objective: str) -> str | None:
    """The direction of ``objective`` (``maximize``, ``minimize``), or None for an unknown one."""
    if objective.startswith(GROUP_OBJECTIVE) and len(objective) > len(GROUP_OBJECTIVE):
        return "maximize"
    return OBJECTIVES.get(objective)


def objective_group(objective: str) -> str | None:
    """The team group ``objective`` names (``return/<group>``), or None."""
    return objective[len(GROUP_OBJECTIVE) :] if direction(objective) and objective.startswith(GROUP_OBJECTIVE) else None


SAMPLERS = ("tpe", "random", "cmaes")
PRUNERS = ("median", "hyperband", "none")
FINISHED = ("COMPLETE", "PRUNED")


def import_optuna() -> Any:
    """The ``optuna`` module; an InputError naming the extra when it is missing."""
    try:
        import optuna
    except ImportError as exc:
        raise InputError(
            "rlcli tune",
            f"searching needs optuna, which is not installed: pip install "
            f"'rlcli[{EXTRA}]' ({type(exc).__name__}: {exc})",
        ) from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # Heartbeats are what finds the trials of a killed tuner; Optuna flags them as experimental, and as
    # meant for Study.optimize, which an ask-and-tell tuner does not use.
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")
    return optuna


def make_sampler(name: str, *, startup_trials: int, seed: int | None = None) -> Any:
    """Optuna's sampler ``name``: TPE as RL-Zoo sets it (multivariate, ``startup_trials`` random trials
    first), random, or CMA-ES (which needs the ``cmaes`` package, part of the extra)."""
    optuna = import_optuna()
    if name == "tpe":
        return optuna.samplers.TPESampler(n_startup_trials=startup_trials, multivariate=True, seed=seed)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "cmaes":
        try:
            import cmaes  # noqa: F401 - Optuna's CmaEsSampler imports it on first use
        except ImportError:
            raise InputError("--sampler cmaes", f"needs the cmaes package: pip install 'rlcli[{EXTRA}]'") from None
        return optuna.samplers.CmaEsSampler(seed=seed, n_startup_trials=startup_trials)
    raise InputError(f"--sampler {name}", f"unknown sampler; allowed: {', '.join(SAMPLERS)}")


def make_pruner(name: str, *, report_every: int, budget: int, seeds: int, startup_trials: int) -> Any:
    """Optuna's pruner ``name``, its steps counted in frames (a trial's ``seeds`` one after the other,
    ``budget`` frames each)."""
    optuna = import_optuna()
    if name == "median":
        # As RL-Zoo: no pruning before the startup trials have finished, nor in a budget's first third.
        return optuna.pruners.MedianPruner(n_startup_trials=startup_trials, n_warmup_steps=budget // 3)
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=report_every, max_resource=budget * seeds)
    if name == "none":
        return optuna.pruners.NopPruner()
    raise InputError(f"--pruner {name}", f"unknown pruner; allowed: {', '.join(PRUNERS)}")


def open_storage(url: str) -> Any:
    """The Optuna storage at ``url``: an RDB URL (``sqlite:///``, ``postgresql://``, ``mysql://``) with
    heartbeats on, or ``journal:///PATH`` for Optuna's journal file (a shared filesystem).

    Raises:
        InputError: the URL cannot be opened; names the missing database driver when that is why.
    """
    optuna = import_optuna()
    what = f"--storage {url}"
    if url.startswith("journal://"):
        path = Path(url[len("journal://") :]).expanduser()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            from optuna.storages.journal import JournalFileBackend

            return optuna.storages.JournalStorage(JournalFileBackend(str(path)))
        except OSError as exc:
            raise InputError(what, f"cannot open the journal file {path}: {exc.strerror or exc}") from None
    if "://" not in url:
        raise InputError(
            what,
            "not a storage URL; give sqlite:///PATH, postgresql://USER:PASSWORD@HOST/DB, "
            "mysql://USER:PASSWORD@HOST/DB or journal:///PATH",
        )
    lock = None
    if url.startswith("sqlite:///"):
        database = Path(url[len("sqlite:///") :]).expanduser()
        try:
            database.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(what, f"cannot create {database.parent}: {exc.strerror or exc}") from None
        # Tuners started together on one new SQLite file would each create its tables.
        lock = database.with_name(database.name + ".lock")
    # Several tuners on one SQLite file wait for each other's writes instead of failing at once.
    engine = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}
    try:
        with locked(lock) if lock is not None else nullcontext():
            return _rdb_storage(optuna, url, engine)
    except ImportError as exc:
        cause = exc if isinstance(exc, ModuleNotFoundError) else exc.__cause__ or exc.__context__
        module = getattr(cause, "name", None) or _SCHEME_DRIVERS.get(url.split("://", 1)[0], "its driver")
        raise InputError(
            what, f"the database driver {module!r} is not installed: pip install {_DRIVERS.get(module, module)}"
        ) from None
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy's many errors: a URL that cannot be opened
        first = (str(exc).splitlines() or [""])[0][:300]
        raise InputError(what, f"Optuna cannot open it: {type(exc).__name__}: {first}") from None


def _rdb_storage(optuna: Any, url: str, engine: dict) -> Any:
    """Optuna's RDBStorage at ``url``. Workers on other machines that start together race to create the
    database's tables; the one that loses (a duplicate key or table) tries again, 5 times at most."""
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    for attempt in range(4):
        try:
            return optuna.storages.RDBStorage(
                url, engine_kwargs=engine, heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S
            )
        except (IntegrityError, ProgrammingError):
            if url.startswith("sqlite"):
                raise
            time.sleep(1.0 + attempt)
    return optuna.storages.RDBStorage(url, engine_kwargs=engine, heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` for the block (nothing where the platform has none)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_DRIVERS = {
    "psycopg2": "psycopg2-binary",
    "psycopg": "'psycopg[binary]'",
    "MySQLdb": "mysqlclient",
    "pymysql": "pymysql",
}
# The module SQLAlchemy's default driver of each URL scheme imports.
_SCHEME_DRIVERS = {"postgresql": "psycopg2", "mysql": "MySQLdb", "mysql+pymysql": "pymysql"}


def open_study(
    name: str, storage: Any, *, direction: str, preset: str, objective: str, sampler: Any, pruner: Any
) -> Any:
    """The study ``name``: created, or joined when it exists with the same preset and objective.

    Raises:
        InputError: it exists for another preset, objective or direction.
    """
    optuna = import_optuna()
    try:
        existing = optuna.load_study(study_name=name, storage=storage, sampler=sampler, pruner=pruner)
    except KeyError:
        existing = None
    if existing is not None:
        theirs = existing.user_attrs.get("preset"), existing.user_attrs.get("objective")
        # A study another worker has just created may not have its attributes yet.
        if existing.direction.name.lower() != direction or (theirs[0] is not None and theirs != (preset, objective)):
            raise InputError(
                f"--study {name}",
                f"this study exists for preset {theirs[0]!r}, objective "
                f"{theirs[1]!r} ({existing.direction.name.lower()}); this search is "
                f"{preset!r}, {objective!r} ({direction}): choose another --study",
            )
        return existing
    study = optuna.create_study(
        study_name=name, storage=storage, sampler=sampler, pruner=pruner, direction=direction, load_if_exists=True
    )
    if "preset" not in study.user_attrs:
        study.set_user_attr("preset", preset)
        study.set_user_attr("objective", objective)
    return study


def check_space(study: Any, params: list, name: str) -> None:
    """Raise an InputError when the study's trials sampled a key from a distribution Optuna cannot
    continue with this space's (other choices, or log turned on or off)."""
    optuna = import_optuna()
    seen: dict[str, Any] = {}
    for trial in study.get_trials(deepcopy=False):
        for key, distribution in trial.distributions.items():
            seen.setdefault(key, distribution)
    for param in params:
        old = seen.get(param.key)
        if old is None:
            continue
        try:
            optuna.distributions.check_distribution_compatibility(old, param.distribution(optuna))
        except ValueError as exc:
            raise InputError(
                f"--study {name}",
                f"its trials sampled {param.key} from "
                f"{_described(old)}, which this space's {param.describe()} cannot "
                f"continue ({exc}); keep the study's space or choose another --study",
            ) from None


def _described(distribution: Any) -> str:
    choices = getattr(distribution, "choices", None)
    if choices is not None:
        return "{ choices = [" + ", ".join(map(str, choices)) + "] }"
    return (
        f"{{ low = {distribution.low}, high = {distribution.high}" + (", log = true" if distribution.log else "") + " }"
    )


def load_existing(name: str, storage: Any) -> Any:
    """An existing study, for ``--show``; an InputError naming the studies there when it is not."""
    optuna = import_optuna()
    try:
        return optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        names = [s.study_name for s in optuna.get_all_study_summaries(storage, include_best_trial=False)]
        raise InputError(
            f"--study {name}",
            "no such study in this storage; studies there: " + (", ".join(names) if names else "none"),
        ) from None


def grouping(logger: Any, study: Any, name: str) -> tuple[list, str | None]:
    """The ``--set`` items that group the trials' tracking runs by study (a W&B group, an MLflow parent run
    kept in the study's attributes), and that parent run's id."""
    items, parent = [], None
    if "wandb" in logger.backends and logger.group is None:
        items.append(Override(f"logger.group={json.dumps(name)}", f"rlcli tune: the W&B group {name}"))
    if "mlflow" in logger.backends and logger.mlflow_parent is None:
        from rlcli.loggers.tracking import study_run

        parent = study_run(logger, name, study.user_attrs.get("mlflow_parent"))
        study.set_user_attr("mlflow_parent", parent)
        items.append(Override(f"logger.mlflow_parent={json.dumps(parent)}", "rlcli tune: the MLflow study run"))
    return items, parent


def fail_stale(study: Any) -> None:
    """Mark FAIL the RUNNING trials whose tuner stopped beating (killed): Optuna's own check."""
    # A no-op on a storage without heartbeats (the journal file).
    optuna = import_optuna()
    optuna.storages.fail_stale_trials(study)
    # A tuner killed between asking for a trial and its first heartbeat left one that Optuna never finds
    # stale: a live tuner names itself on a trial within milliseconds of asking.
    cutoff = datetime.datetime.now() - datetime.timedelta(seconds=3 * GRACE_S)
    for trial in study.get_trials(deepcopy=False, states=[optuna.trial.TrialState.RUNNING]):
        if "tuner" not in trial.user_attrs and trial.datetime_start is not None and trial.datetime_start < cutoff:
            try:
                study._storage.set_trial_state_values(trial._trial_id, state=optuna.trial.TrialState.FAIL)
            except optuna.exceptions.UpdateFinishedTrialError:
                pass


def requeue_failed(study: Any) -> list[int]:
    """Enqueue once, with the same parameters, each FAIL trial not enqueued again before; their numbers."""
    optuna = import_optuna()
    done = set(study.user_attrs.get("requeued", []))
    again = [
        t
        for t in study.get_trials(deepcopy=False, states=[optuna.trial.TrialState.FAIL])
        if t.number not in done and t.params
    ]
    for trial in again:
        study.enqueue_trial(trial.params, user_attrs={"requeued_from": trial.number})
    if again:
        study.set_user_attr("requeued", sorted(done | {t.number for t in again}))
    return [t.number for t in again]


def heartbeat(study: Any, trials: list) -> None:
    """Record a heartbeat for each of ``trials`` (running), on a storage that keeps them."""
    record = getattr(study._storage, "record_heartbeat", None)
    if record is not None and study._storage.get_heartbeat_interval() is not None:
        for trial in trials:
            record(trial._trial_id)


def counts(study: Any) -> tuple[int, int]:
    """(finished: complete and pruned, running) trials of the study, every worker's."""
    finished = running = 0
    for trial in study.get_trials(deepcopy=False):
        finished += trial.state.name in FINISHED
        running += trial.state.name == "RUNNING"
    return finished, running


@dataclass
class TrialRow:
    """One trial as the table shows it."""

    number: int
    state: str
    value: float | None
    frames: int | None
    seconds: float | None
    params: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None


def rows(study: Any) -> list[TrialRow]:
    """Every trial of ``study``, in number order."""
    out = []
    for trial in study.get_trials(deepcopy=False):
        value = (
            trial.value
            if trial.state.name == "COMPLETE"
            else (trial.intermediate_values[max(trial.intermediate_values)] if trial.intermediate_values else None)
        )
        attrs = trial.user_attrs
        out.append(
            TrialRow(
                trial.number,
                trial.state.name,
                value if value is None or math.isfinite(value) else None,
                attrs.get("frames"),
                attrs.get("seconds"),
                dict(trial.params),
                attrs.get("reason"),
            )
        )
    return out


def best_trial(study: Any) -> Any | None:
    try:
        return study.best_trial
    except ValueError:
        return None


def importances(study: Any) -> dict[str, float]:
    """Optuna's parameter importances (its default evaluator); empty when too few trials completed."""
    optuna = import_optuna()
    if sum(t.state.name == "COMPLETE" for t in study.get_trials(deepcopy=False)) < 3:
        return {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return dict(optuna.importance.get_param_importances(study))
    except (ValueError, RuntimeError, ZeroDivisionError):
        return {}
