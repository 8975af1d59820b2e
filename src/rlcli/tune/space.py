"""The search space of ``rlcli tune``: a TOML file whose ``[space]`` table gives, per dotted config key,
``{ low, high, log = true }`` (floats), ``{ low, high, step }`` (integers) or ``{ choices = [...] }``, and
whose optional ``[tune]`` table sets ``report_every`` (frames between two values sent to the pruner).

Every key, bound and choice is checked against the config models of the preset's algorithm before any
trial starts, with the messages a config file gets (did-you-mean included). Bounds are checked against
each field alone; a combination of values that breaks a check between fields (a minibatch larger than the
batch) is only known once sampled, and the tuner prunes such a trial with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from rlcli.config.errors import ConfigError, ConfigIssue
from rlcli.config.load import Override, read_toml
from rlcli.config.messages import field_message, unknown_key
from rlcli.config.model import toml_value
from rlcli.config.schema import RunConfig

_SPEC_KEYS = {"low", "high", "log", "step", "choices"}
_PRIMITIVES = (bool, int, float, str)


@dataclass(frozen=True)
class Param:
    """One dimension of the space: a float or int range, or choices (any TOML values)."""

    key: str
    kind: str
    """"float", "int" or "choice"."""
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    step: float | int | None = None
    choices: tuple[Any, ...] = ()

    def suggest(self, trial) -> Any:
        """The value an Optuna trial samples for this key."""
        if self.kind == "float":
            return trial.suggest_float(self.key, self.low, self.high, log=self.log, step=self.step)
        if self.kind == "int":
            return trial.suggest_int(self.key, self.low, self.high, log=self.log, step=self.step or 1)
        return self.value_of(trial.suggest_categorical(self.key, [_stored(c) for c in self.choices]))

    def distribution(self, optuna: Any) -> Any:
        """The Optuna distribution :meth:`suggest` samples from."""
        found = optuna.distributions
        if self.kind == "float":
            return found.FloatDistribution(self.low, self.high, log=self.log, step=self.step)
        if self.kind == "int":
            return found.IntDistribution(self.low, self.high, log=self.log, step=self.step or 1)
        return found.CategoricalDistribution([_stored(c) for c in self.choices])

    def value_of(self, stored: Any) -> Any:
        """The config value of a stored parameter (a list or table choice is stored as its TOML text)."""
        if self.kind != "choice":
            return stored
        for choice in self.choices:
            if _stored(choice) == stored and type(_stored(choice)) is type(stored):
                return choice
        return stored

    def describe(self) -> str:
        if self.kind == "choice":
            return "{ choices = [" + ", ".join(toml_value(c) for c in self.choices) + "] }"
        extra = (", log = true" if self.log else "") + (f", step = {self.step}" if self.step is not None else "")
        return f"{{ low = {self.low}, high = {self.high}{extra} }}"


def _stored(choice: Any) -> Any:
    """How Optuna stores a choice: itself when a number, string or boolean, else its TOML text."""
    return choice if isinstance(choice, _PRIMITIVES) else toml_value(choice)


@dataclass(frozen=True)
class Space:
    file: str
    params: tuple[Param, ...]
    report_every: int | None
    startup_trials: int = 5


def read_space(path: Path, cfg: RunConfig) -> Space:
    """The space in ``path``, checked against ``cfg`` (the preset, with its overrides).

    Raises:
        ConfigError: every problem found, each naming its key in the space file.
    """
    name = str(path)
    if not path.is_file():
        raise ConfigError(name, [ConfigIssue("no such file; give the search space with --space FILE.toml")])
    data = read_toml(path)
    issues: list[ConfigIssue] = []
    unknown = sorted(set(data) - {"space", "tune"})
    if unknown:
        issues.append(
            ConfigIssue(
                f"unknown table [{unknown[0]}]; a space file has [space] and an optional [tune]", path=unknown[0]
            )
        )
    settings = _settings(data.get("tune", {}), issues)
    table = data.get("space")
    if not isinstance(table, dict) or not table:
        issues.append(
            ConfigIssue(
                "no [space] table, or an empty one: give at least one key, such as "
                '"optim.lr" = { low = 1e-5, high = 1e-2, log = true }',
                path="space",
            )
        )
        raise ConfigError(name, issues)
    params = []
    for key, spec in _leaves(table):
        param = _param(key, spec, cfg, issues)
        if param is not None:
            params.append(param)
    if issues:
        raise ConfigError(name, issues)
    return Space(name, tuple(params), settings.get("report_every"), settings.get("startup_trials", 5))


_TUNE_KEYS = {
    "report_every": "frames between two values sent to the pruner",
    "startup_trials": "trials sampled at random, and never pruned, before TPE and the median pruner "
    "start (RL-Zoo's n_startup_trials)",
}


def _settings(tune: Any, issues: list[ConfigIssue]) -> dict[str, int]:
    """The ``[tune]`` table: whole numbers >= 1, each optional."""
    if not isinstance(tune, dict):
        issues.append(ConfigIssue("[tune] must be a table", path="tune"))
        return {}
    for key in sorted(set(tune) - set(_TUNE_KEYS)):
        issues.append(ConfigIssue(f"unknown key in [tune]; allowed: {', '.join(_TUNE_KEYS)}", path=f"tune.{key}"))
    found = {}
    for key, what in _TUNE_KEYS.items():
        value = tune.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            issues.append(
                ConfigIssue(
                    f"{toml_value(value)} is not allowed; allowed: a whole number >= 1 ({what})", path=f"tune.{key}"
                )
            )
        else:
            found[key] = value
    return found


def _leaves(table: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, spec) for each spec in ``table``: ``"optim.lr" = {...}`` and ``[space.optim] lr = {...}``
    are the same key."""
    found = []
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value and not (set(value) & _SPEC_KEYS):
            found.extend(_leaves(value, dotted + "."))
        else:
            found.append((dotted, value))
    return found


def _param(key: str, spec: Any, cfg: RunConfig, issues: list[ConfigIssue]) -> Param | None:
    """The checked parameter for ``key``, or None with its problems added to ``issues``."""
    where = f"space.{key}"
    owner, problem = _owner(key, cfg)
    if problem is not None:
        issues.append(ConfigIssue(problem, path=where))
        return None
    # _owner gives the section's model wherever it finds no problem.
    assert owner is not None
    field = key.rsplit(".", 1)[-1]
    if not isinstance(spec, dict) or not spec:
        issues.append(
            ConfigIssue(
                "expected a table: { low, high, log = true }, { low, high, step } or { choices = [...] }", path=where
            )
        )
        return None
    extra = sorted(set(spec) - _SPEC_KEYS)
    if extra:
        issues.append(ConfigIssue(f"unknown key {extra[0]!r}; allowed: low, high, log, step, choices", path=where))
        return None
    if "choices" in spec:
        return _choice(key, spec, owner, field, issues)
    return _range(key, spec, owner, field, issues)


def _choice(key: str, spec: dict, owner: BaseModel, field: str, issues: list[ConfigIssue]) -> Param | None:
    where = f"space.{key}"
    choices = spec["choices"]
    if set(spec) != {"choices"}:
        issues.append(ConfigIssue("choices cannot be combined with low, high, log or step", path=where))
        return None
    if not isinstance(choices, list) or not choices:
        issues.append(ConfigIssue("choices is empty; give at least one value, such as choices = [64, 128]", path=where))
        return None
    ok = True
    for choice in choices:
        problem = field_problem(owner, field, choice, key)
        if problem is not None:
            issues.append(ConfigIssue(f"choice {toml_value(choice)}: {problem}", path=where))
            ok = False
    return Param(key, "choice", choices=tuple(choices)) if ok else None


def _range(key: str, spec: dict, owner: BaseModel, field: str, issues: list[ConfigIssue]) -> Param | None:
    where = f"space.{key}"
    if "low" not in spec or "high" not in spec:
        issues.append(ConfigIssue("a range needs both low and high (or give choices = [...])", path=where))
        return None
    low, high, log, step = spec["low"], spec["high"], spec.get("log", False), spec.get("step")
    numbers = [v for v in (low, high, step) if v is not None]
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) for v in numbers):
        issues.append(ConfigIssue("low, high and step must be finite numbers", path=where))
        return None
    if not isinstance(log, bool):
        issues.append(ConfigIssue("log must be true or false", path=where))
        return None
    kind = "int" if _is_int_field(owner, field) else "float"
    if kind == "int" and not all(isinstance(v, int) for v in numbers):
        issues.append(ConfigIssue(f"{key} is an integer: low, high and step must be whole numbers", path=where))
        return None
    problems = []
    if low > high:
        problems.append(f"low ({low}) is above high ({high})")
    if log and low <= 0:
        problems.append(f"log = true needs low > 0 (got {low})")
    if step is not None and step <= 0:
        problems.append(f"step must be > 0 (got {step})")
    if log and step is not None and (kind == "float" or step != 1):
        problems.append("log = true cannot be combined with a step" + (" other than 1" if kind == "int" else ""))
    for name, bound in (("low", low), ("high", high)):
        problem = field_problem(owner, field, float(bound) if kind == "float" else bound, key)
        if problem is not None:
            problems.append(f"{name} = {bound}: {problem}")
    for problem in problems:
        issues.append(ConfigIssue(problem, path=where))
    if problems:
        return None
    if kind == "float":
        low, high, step = float(low), float(high), None if step is None else float(step)
    return Param(key, kind, low=low, high=high, log=log, step=step)


def _owner(key: str, cfg: RunConfig) -> tuple[BaseModel | None, str | None]:
    """The config section that holds ``key``'s field, or the problem (unknown key, with a did-you-mean)."""
    parts = key.split(".")
    if len(parts) < 2 or not all(parts):
        return None, (
            f"{key!r} is not a dotted config key; name a field with its section, such as optim.lr or algo.gamma"
        )
    owner: Any = cfg
    loc: list[str] = []
    for index, part in enumerate(parts):
        loc.append(part)
        if index == 1 and loc[0] == "algo":
            loc.insert(1, cfg.algo.name)
        model = type(owner)
        if part not in model.model_fields:
            return None, unknown_key(tuple(loc))
        if index == len(parts) - 1:
            return owner, None
        owner = getattr(owner, part)
        if not isinstance(owner, BaseModel):
            return (
                None,
                f"{'.'.join(parts[: index + 1])} is a value, not a section: it has no field {parts[index + 1]!r}",
            )
    return None, "not a field"


def _is_int_field(owner: BaseModel, field: str) -> bool:
    from typing import get_args

    annotation = type(owner).model_fields[field].annotation
    types = [annotation, *get_args(annotation)]
    return int in types and float not in types


def field_problem(owner: BaseModel, field: str, value: Any, key: str) -> str | None:
    """Why ``value`` is not allowed in ``owner``'s ``field`` on its own (its type and bounds, as a config
    file's error says it), or None; checks between fields are left to the sampled config."""
    data = owner.model_dump()
    data[field] = value
    try:
        type(owner).model_validate(data)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            loc = tuple(str(p) for p in err["loc"])
            if err["type"] != "cross_field" and loc[:1] == (field,):
                prefix = tuple(key.split(".")[:-1])
                if prefix[:1] == ("algo",):
                    prefix = ("algo", getattr(owner, "name", ""), *prefix[1:])
                # field_message only reads the error: pydantic's ErrorDetails as they come.
                return field_message(err["type"], err, (*prefix, *loc))
    return None


def overrides(values: dict[str, Any], trial: int) -> list[Override]:
    """The ``--set`` items that put a trial's sampled ``values`` into the preset."""
    return [
        Override(f"{key}={toml_value(value)}", f"trial {trial}: {key} = {toml_value(value)}")
        for key, value in values.items()
    ]
