"""Load a run config: TOML file(s) -> ``extends`` chain -> ``--set`` overrides -> RunConfig.

Every failure becomes a :class:`ConfigError` that names the file, the dotted
field, the line where the TOML tells it, and what is allowed.
"""

from __future__ import annotations

import datetime
import difflib
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from rlcli.config.schema import RunConfig

from rlcli.config.errors import ConfigError, ConfigIssue, InputError, single
from rlcli.config.model import field_bounds, range_text, toml_value

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_ASSIGN = re.compile(r"^\s*((?:[A-Za-z0-9_\-]+|\"[^\"]*\")(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|\"[^\"]*\"))*)\s*=")
_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_BARE_STRING = re.compile(r"^[A-Za-z0-9_./~][A-Za-z0-9_\-.:/~]*$")


def preset_dirs() -> list[Path]:
    """Folders searched for a preset named without a path, first match wins."""
    package = Path(__file__).resolve().parent.parent
    candidates = [Path.cwd() / "presets", package / "presets", package.parents[1] / "presets"]
    seen: list[Path] = []
    for folder in candidates:
        if folder.is_dir() and folder.resolve() not in seen:
            seen.append(folder.resolve())
    return seen


def available_presets() -> list[str]:
    """Names of the presets found in :func:`preset_dirs`."""
    return sorted({p.stem for d in preset_dirs() for p in d.glob("*.toml") if not p.stem.startswith("_")})


def run_config_file(run_dir: Path) -> Path:
    """The ``config.toml`` of the run folder ``run_dir``.

    Raises:
        InputError: ``run_dir`` is missing, not a folder, or holds no config.toml.
    """
    what = f"run folder {run_dir}"
    if not run_dir.is_dir():
        raise InputError(what, "no such folder" if not run_dir.exists() else "not a folder")
    config_file = run_dir / "config.toml"
    if not config_file.is_file():
        raise InputError(what, "has no config.toml: it is not a run folder made by rlcli train")
    return config_file


def find_preset(name: str | Path) -> Path:
    """The file for ``name``: an existing path, or a bare preset name such as ``ppo_cartpole``."""
    path = Path(name)
    if path.is_file():
        return path
    text = str(name)
    looks_like_path = text.endswith(".toml") or "/" in text or "\\" in text
    if not looks_like_path:
        for folder in preset_dirs():
            candidate = folder / f"{text}.toml"
            if candidate.is_file():
                return candidate
        known = available_presets()
        close = difflib.get_close_matches(text, known, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise single(
            text,
            f"no preset named {text!r}; {hint}known presets: {', '.join(known) or 'none'}",
        )
    if path.is_dir():
        raise single(text, "is a folder, not a TOML file")
    raise single(text, "file not found")


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


def key_lines(path: Path) -> dict[str, int]:
    """First line (1-based) of each dotted key and table header in a TOML file."""
    lines: dict[str, int] = {}
    table: list[str] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return lines
    for number, raw in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(raw)
        if header:
            table = _split_key(header.group(1))
            lines.setdefault(".".join(table), number)
            continue
        assign = _ASSIGN.match(raw)
        if assign:
            lines.setdefault(".".join(table + _split_key(assign.group(1))), number)
    return lines


def _split_key(key: str) -> list[str]:
    return [part.strip().strip('"') for part in key.split(".")]


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
                raise single(display_path(resolved), f"extends {parent!r}: {problem} ({display_path(current)})",
                             path="extends", line=key_lines(resolved).get("extends"))
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
                "(numbers, true/false, \"strings\", [lists], {inline = tables})",
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


def load_config(preset: str | Path, overrides: Sequence[str | Override] = ()) -> "RunConfig":
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


def validate_data(
    data: dict[str, Any],
    file: str | None = None,
    *,
    chain: Sequence[Path] = (),
    overrides: dict[str, str] | None = None,
) -> "RunConfig":
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
    issues = [issue for err in errors for issue in _issues(err, list(chain), overrides or {})]
    if not any(err["type"] == "cross_field" and len(err["loc"]) == 0 for err in errors):
        for path, message in _cross_section_problems(data):
            issues.append(_located(path, message, list(chain), overrides or {}))
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
    return cross_section_problems(sections)


def _issues(err: dict[str, Any], chain: list[Path], overrides: dict[str, str]) -> list[ConfigIssue]:
    loc = tuple(str(part) for part in err["loc"])
    if err["type"] == "cross_field":
        return [_located(path, message, chain, overrides) for path, message in err["ctx"]["problems"]]
    # List items read as TOML users index them: network.hidden_sizes[0].
    path = ""
    for part in _without_tags(loc):
        path += f"[{part}]" if part.isdigit() and path else ("." if path else "") + part
    return [_located(path, _message(err["type"], err, loc), chain, overrides)]


def _located(path: str, message: str, chain: list[Path], overrides: dict[str, str]) -> ConfigIssue:
    source, line = _locate(path, chain, overrides)
    return ConfigIssue(message, path=path, source=source, line=line)


def _without_tags(loc: tuple[str, ...]) -> list[str]:
    from rlcli.config.algos import ALGO_CONFIGS

    # Pydantic puts the discriminator tag in the location: ("algo", "ppo", "gamma").
    if len(loc) > 1 and loc[0] == "algo" and loc[1] in ALGO_CONFIGS:
        return [loc[0], *loc[2:]]
    return list(loc)


def _message(kind: str, err: dict[str, Any], loc: tuple[str, ...]) -> str:
    from rlcli.config.algos import ALGO_CONFIGS

    known_algos = ", ".join(ALGO_CONFIGS)
    if kind == "extra_forbidden":
        return _unknown_key(loc)
    if kind == "union_tag_invalid":
        name = (err.get("input") or {}).get("name") if isinstance(err.get("input"), dict) else None
        if name is not None and not isinstance(name, str):
            return (f"name = {_shown(name)} is not a string; write it in quotes, such as name = \"ppo\"; "
                    f"known algorithms: {known_algos}")
        return f"unknown algorithm {err['ctx']['tag']!r}; known algorithms: {known_algos}"
    if kind == "union_tag_not_found":
        return f"missing algo.name; known algorithms: {known_algos}"
    if kind == "missing":
        if len(loc) == 1:
            return f"missing required section [{loc[0]}]"
        return "missing required field"
    if kind == "value_error":
        return str(err["ctx"]["error"])
    got = _shown(err.get("input"))
    ctx = err.get("ctx") or {}
    expected = _EXPECTED.get(kind)
    if expected is not None:
        what = "the string " if isinstance(err.get("input"), str) else ""
        return f"expected {expected}, got {what}{got}"
    if kind in _BOUNDS:
        return f"{got} is out of range; allowed: {_allowed_range(loc, kind, ctx)}"
    if kind == "literal_error":
        return f"{got} is not allowed; allowed: {ctx.get('expected', '')}".replace("'", '"')
    if kind in ("too_short", "too_long"):
        size = ctx.get("min_length") if kind == "too_short" else ctx.get("max_length")
        unit = "characters" if isinstance(err.get("input"), str) else "items"
        side = "at least" if kind == "too_short" else "at most"
        return f"{got} has {ctx.get('actual_length', len(err.get('input') or ''))} {unit}; allowed: {side} {size}"
    if kind in ("string_too_short", "string_too_long"):
        side, size = (("at least", ctx.get("min_length")) if kind == "string_too_short"
                      else ("at most", ctx.get("max_length")))
        return f"{got} is too {'short' if kind == 'string_too_short' else 'long'}; allowed: {side} {size} characters"
    if kind == "finite_number":
        return f"{got} is not a finite number; allowed: finite numbers"
    return f"{err['msg']} (got {got})"


# What a strict type error expected, in words; TOML types named as a TOML user writes them.
_EXPECTED = {
    "int_type": "an integer such as 16 (no quotes, no decimal point)",
    "int_from_float": "an integer such as 16 (no decimal point)",
    "float_type": "a number such as 0.5 (no quotes)",
    "bool_type": "true or false (no quotes)",
    "string_type": 'a string in quotes, such as "text"',
    "list_type": "a list such as [64, 64]",
    "dict_type": "a table such as { key = 1 }",
    "model_type": "a table (a [section] or { key = value })",
    "model_attributes_type": "a table (a [section] or { key = value })",
}
_BOUNDS = {"greater_than": "gt", "greater_than_equal": "ge", "less_than": "lt", "less_than_equal": "le"}


def _allowed_range(loc: tuple[str, ...], kind: str, ctx: dict[str, Any]) -> str:
    """The whole range of the field at ``loc`` in words: ``0 to 1``, ``> 0``, ``>= 1 and < 1``."""
    model = _model_at(loc[:-1])
    field = model.model_fields.get(loc[-1]) if model is not None else None
    bounds = field_bounds(field) if field is not None else {}
    if not bounds:
        key = _BOUNDS[kind]
        bounds = {key: ctx.get(key)}
    return range_text(bounds)


def _shown(value: Any) -> str:
    """A value as its TOML literal (strings quoted, booleans lower case), cut to 60 characters."""
    try:
        text = toml_value(value)
    except TypeError:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _unknown_key(loc: tuple[str, ...]) -> str:
    from rlcli.config.algos import ALGO_CONFIGS

    key = loc[-1]
    model = _model_at(loc[:-1])
    allowed = sorted(model.model_fields) if model is not None else []
    own = _SYNONYMS.get(key, key)
    close = [own] if own in allowed else difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    if len(loc) == 1:
        hint = f"; did you mean [{close[0]}]?" if close else ""
        return f"unknown section [{key}]{hint} (allowed sections: {', '.join(allowed)})"
    where = ".".join(_without_tags(loc[:-1]))
    elsewhere = None if close else _elsewhere(own, loc)
    hint = f"; did you mean {close[0]}?" if close else (f"; did you mean {elsewhere}?" if elsewhere else "")
    message = f"unknown key{hint}" if hint else f"unknown key {key!r} in [{where}]"
    if loc[0] == "algo" and len(loc) > 2 and not hint:
        owners = [n for n, m in ALGO_CONFIGS.items() if key in m.model_fields and n != loc[1]]
        if owners:
            message += f"; {key!r} belongs to {', '.join(owners)}, not {loc[1]}"
    return f"{message} (allowed in [{where}]: {', '.join(allowed)})"


# Names that Stable-Baselines3 and RL-Zoo users bring along, mapped to ours.
_SYNONYMS = {
    "learning_rate": "lr",
    "n_envs": "num_envs",
    "env_id": "id",
    "n_timesteps": "total_frames",
    "total_timesteps": "total_frames",
    "n_epochs": "epochs",
    "ent_coef": "entropy_coef",
    "vf_coef": "value_coef",
    "clip_range": "clip_epsilon",
    "net_arch": "hidden_sizes",
    "activation_fn": "activation",
    "buffer_size": "capacity",
}


def _elsewhere(key: str, loc: tuple[str, ...]) -> str | None:
    """The dotted field in another section that ``key`` names, exactly or nearly, if any."""
    from rlcli.config.algos import ALGO_CONFIGS
    from rlcli.config.schema import RunConfig

    algo = loc[1] if loc[0] == "algo" and len(loc) > 2 else None
    fields: dict[str, str] = {}
    prefixes = [(section,) for section in RunConfig.model_fields if section != "algo"]
    # The algorithm being configured, else every one.
    prefixes += [("algo", name) for name in ([algo] if algo else ALGO_CONFIGS)]
    for prefix in prefixes:
        section = prefix[0]
        model = _model_at(prefix)
        if model is None or prefix == loc[:-1]:
            continue
        for name, field in model.model_fields.items():
            fields.setdefault(name, f"{section}.{name}")
            nested = _model_at((*prefix, name)) if field.annotation is not None else None
            for inner in (nested.model_fields if nested is not None else ()):
                fields.setdefault(inner, f"{section}.{name}.{inner}")
    if key in fields:
        return fields[key]
    close = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.8)
    return fields[close[0]] if close else None


def _model_at(loc: tuple[str, ...]) -> type[BaseModel] | None:
    from rlcli.config.algos import ALGO_CONFIGS
    from rlcli.config.schema import RunConfig

    model: type[BaseModel] = RunConfig
    parts = list(loc)
    while parts:
        part = parts.pop(0)
        if part == "algo" and model is RunConfig:
            if not parts or parts[0] not in ALGO_CONFIGS:
                return None
            model = ALGO_CONFIGS[parts.pop(0)]
            continue
        field = model.model_fields.get(part)
        annotation = field.annotation if field else None
        candidates = [annotation, *get_args(annotation)]
        nested = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
        if not nested:
            return None
        model = nested[0]
    return model


def _locate(path: str, chain: list[Path], overrides: dict[str, str]) -> tuple[str | None, int | None]:
    for key, where in overrides.items():
        if key == path or key.startswith(path + ".") or path.startswith(key + "."):
            return where, None
    parts = re.sub(r"\[\d+\]", "", path).split(".") if path else []
    lines = {file: key_lines(file) for file in chain}
    # The full key in any file of the chain beats its table header in the child.
    for end in range(len(parts), 0, -1):
        for file in chain:
            line = lines[file].get(".".join(parts[:end]))
            if line is not None:
                return display_path(file), line
    return (display_path(chain[0]) if chain else None), None


def display_path(path: Path) -> str:
    """``path`` relative to the working folder when it lies below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
