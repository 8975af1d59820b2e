"""Load a run config: TOML file(s) -> ``extends`` chain -> ``--set`` overrides -> RunConfig.

Every failure becomes a :class:`ConfigError` that names the file, the dotted
field, the line where the TOML tells it, and what is allowed (the words come
from :mod:`rlcli.config.messages`; presets are found by :mod:`rlcli.config.presets`).
"""

from __future__ import annotations

import datetime
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
from pydantic import ValidationError

if TYPE_CHECKING:
    from rlcli.config.schema import RunConfig

from rlcli.config.errors import ConfigError, single
from rlcli.config.messages import issue_at, issues_of, key_lines
from rlcli.config.presets import display_path, find_preset
from rlcli.envs import GYMNASIUM_EXTRAS, base_id, env_family

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_BARE_STRING = re.compile(r"^[A-Za-z0-9_./~][A-Za-z0-9_\-.:/~]*$")


def read_toml(path: Path) -> dict[str, Any]:
    """Parse one TOML file; syntax errors carry line and column."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise single(path, "file not found") from None
    except IsADirectoryError:
        raise single(path, "is a folder, not a TOML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise single(path, f"cannot read file: {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        line = getattr(exc, "lineno", None)
        column = getattr(exc, "colno", None)
        found = _TOML_POS.search(message)
        if found:
            line, column = int(found.group(1)), int(found.group(2))
            message = message[: found.start()]
        raise single(path, f"TOML syntax error: {message}", line=line, column=column) from None


def deep_merge(parent: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """``child`` over ``parent``: tables merge key by key, everything else is replaced."""
    merged = dict(parent)
    for key, value in child.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_layers(path: Path) -> tuple[dict[str, Any], list[Path]]:
    """The merged data of ``path`` and its ``extends`` ancestors, and the chain (child first)."""
    chain: list[Path] = []
    layers: list[dict[str, Any]] = []
    current: Path | None = path
    while current is not None:
        resolved = current.resolve()
        if resolved in chain:
            cycle = " -> ".join(str(p) for p in [*chain, resolved])
            raise single(path, f"extends cycle: {cycle}")
        data = read_toml(current)
        chain.append(resolved)
        parent = data.pop("extends", None)
        layers.append(data)
        if parent is None:
            current = None
        elif not isinstance(parent, str) or not parent:
            raise single(current, f"extends must be a path string, got {parent!r}", path="extends")
        else:
            current = resolved.parent / parent
            if not current.is_file():
                problem = "is a folder, not a TOML file" if current.is_dir() else "file not found"
                raise single(
                    display_path(resolved),
                    f"extends {parent!r}: {problem} ({display_path(current)})",
                    path="extends",
                    line=key_lines(resolved).get("extends"),
                )
    merged: dict[str, Any] = {}
    for layer in reversed(layers):
        merged = deep_merge(merged, layer)
    return merged, chain


@dataclass(frozen=True)
class Override:
    """A ``--set`` style ``KEY=VALUE`` that came from a flag: errors about it name ``flag``
    (``--device gpu``), which is what the user typed."""

    text: str
    flag: str


def parse_override(text: str, where: str | None = None) -> tuple[list[str], Any]:
    """Split ``a.b=VALUE`` into its key path and its value, parsed as a TOML literal.

    A bare word that is not valid TOML (``env.id=Pendulum-v1``) is taken as a string.
    ``where`` names what the user typed in errors (default ``--set a.b=VALUE``).
    """
    where = where or f"--set {text}"
    if "=" not in text:
        raise single(None, f"expected KEY=VALUE such as algo.clip_epsilon=0.1, got {text!r}", source=where)
    key, raw = text.split("=", 1)
    keys = [part.strip() for part in key.strip().split(".")]
    if not all(_KEY.match(part) for part in keys):
        raise single(None, f"malformed key {key.strip()!r}; use a dotted path such as algo.gamma", source=where)
    raw = raw.strip()
    try:
        value = tomllib.loads(f"value = {raw}")["value"]
        # No field is a date: "run.name=2024-01-01" means the text as written.
        if isinstance(value, (datetime.date, datetime.time)):
            value = raw
    except tomllib.TOMLDecodeError:
        if not _BARE_STRING.match(raw):
            raise single(
                None,
                f"cannot parse value {raw!r} as a TOML literal "
                '(numbers, true/false, "strings", [lists], {inline = tables})',
                source=where,
                path=".".join(keys),
            ) from None
        value = raw
    return keys, value


def apply_override(data: dict[str, Any], keys: list[str], value: Any, where: str) -> None:
    """Set ``data[k1][k2]... = value`` in place, creating tables as needed."""
    node = data
    for depth, key in enumerate(keys[:-1]):
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            prefix = ".".join(keys[: depth + 1])
            raise single(None, f"{prefix} is a value, not a table", source=where, path=".".join(keys))
        node = child
    node[keys[-1]] = value


def load_config(preset: str | Path, overrides: Sequence[str | Override] = ()) -> RunConfig:
    """Load, merge and validate a preset (a path or a shipped preset's name).

    ``overrides`` are ``KEY=VALUE`` texts with TOML values (``algo.gamma=0.98``), applied
    in order over the file.

    Raises:
        ConfigError: with every problem found, each located as precisely as the TOML allows.
    """
    path = find_preset(preset)
    data, chain = load_layers(path)
    override_paths: dict[str, str] = {}
    for item in overrides:
        text, where = (item.text, item.flag) if isinstance(item, Override) else (item, f"--set {item}")
        keys, value = parse_override(text, where)
        apply_override(data, keys, value, where)
        override_paths[".".join(keys)] = where
    return validate_data(data, display_path(path), chain=chain, overrides=override_paths)


@dataclass(frozen=True)
class Extra:
    """One of rlcli's optional extras (``pip install 'rlcli[NAME]'``) and the module it installs,
    whose import tells whether it is there."""

    name: str
    module: str


DATASETS = Extra("minari", "minari")
"""What a ``[data]`` section needs: its dataset is read with minari (``rlcli.datasets`` names the same
extra in its messages)."""
ENVPOOL = Extra("envpool", "envpool")
"""What ``[env] backend = "envpool"`` needs, whatever the env's family (EnvPool has its own Box2D, MuJoCo and
Atari)."""


def preset_extras(preset: str | Path) -> tuple[Extra, ...]:
    """The optional extras that a preset (a path or a shipped preset's name) needs before it can be
    built: envpool for ``[env] backend = "envpool"``, else the extra of its env's namespace (``ALE/``: atari)
    or of the gymnasium package its env comes from (Box2D, MuJoCo); then minari when it has a ``[data]``
    section.

    The file is read, ``extends`` merged, but not validated: the answer does not depend on the extras
    being installed (an ``ALE/`` id is unknown until ale-py registers it).

    Raises:
        ConfigError: the file cannot be read (TOML syntax, a broken ``extends``).
    """
    data, _ = load_layers(find_preset(preset))
    env = data.get("env")
    env_id = env.get("id") if isinstance(env, dict) else None
    extras: list[Extra] = []
    if isinstance(env, dict) and isinstance(env_id, str) and env.get("backend") == "envpool":
        extras.append(ENVPOOL)
    elif isinstance(env_id, str):
        family = env_family(env_id)
        # A partially observable task needs what its fully observed one needs (LunarLanderNoVel: box2d).
        spec = gym.registry.get(base_id(env_id))
        entry = spec.entry_point if spec is not None and isinstance(spec.entry_point, str) else ""
        if family is not None:
            extras.append(Extra(family.extra, family.module))
        extras += [Extra(*extra) for package, extra in GYMNASIUM_EXTRAS.items() if entry.startswith(f"{package}.")]
    if "data" in data:
        extras.append(DATASETS)
    return tuple(extras)


def validate_data(
    data: dict[str, Any],
    file: str | None = None,
    *,
    chain: Sequence[Path] = (),
    overrides: dict[str, str] | None = None,
) -> RunConfig:
    """Validate already-parsed config data, raising :class:`ConfigError` with every problem.

    Field errors and the checks between sections come together: a cross-section check
    runs whenever the sections it reads are valid on their own. ``chain`` (the files it
    came from, child first) and ``overrides`` (dotted path -> the ``--set`` text or flag
    that set it) let each error point at the line or flag behind it.
    """
    from rlcli.config.schema import RunConfig

    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    issues = [issue for err in errors for issue in issues_of(err, list(chain), overrides or {})]
    if not any(err["type"] == "cross_field" and len(err["loc"]) == 0 for err in errors):
        for path, message in _cross_section_problems(data):
            issues.append(issue_at(path, message, list(chain), overrides or {}))
    raise ConfigError(file, issues)


def _cross_section_problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    """The checks between sections, run on the sections of ``data`` that are valid alone."""
    from pydantic import TypeAdapter

    from rlcli.config.schema import RunConfig, cross_section_problems

    if not isinstance(data, dict):
        return []
    sections: dict[str, Any] = {}
    for name, field in RunConfig.model_fields.items():
        try:
            if name in data:
                sections[name] = TypeAdapter(field.annotation).validate_python(data[name])
            elif not field.is_required():
                sections[name] = field.get_default(call_default_factory=True)
            else:
                sections[name] = None
        except ValidationError:
            sections[name] = None
    return cross_section_problems(sections, given=set(data))
