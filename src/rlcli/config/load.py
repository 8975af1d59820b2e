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
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from rlcli.config.schema import RunConfig

from rlcli.config.errors import ConfigError, ConfigIssue, single

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


def parse_override(text: str) -> tuple[list[str], Any]:
    """Split ``a.b=VALUE`` into its key path and its value, parsed as a TOML literal.

    A bare word that is not valid TOML (``env.id=Pendulum-v1``) is taken as a string.
    """
    where = f"--set {text}"
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


def apply_override(data: dict[str, Any], keys: list[str], value: Any, text: str) -> None:
    """Set ``data[k1][k2]... = value`` in place, creating tables as needed."""
    node = data
    for depth, key in enumerate(keys[:-1]):
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            prefix = ".".join(keys[: depth + 1])
            raise single(None, f"{prefix} is a value, not a table", source=f"--set {text}", path=".".join(keys))
        node = child
    node[keys[-1]] = value


def load_config(preset: str | Path, overrides: Sequence[str] = ()) -> "RunConfig":
    """Load, merge and validate a preset (a path or a shipped preset's name).

    Raises:
        ConfigError: with every problem found, each located as precisely as the TOML allows.
    """
    path = find_preset(preset)
    data, chain = load_layers(path)
    override_paths: dict[str, str] = {}
    for text in overrides:
        keys, value = parse_override(text)
        apply_override(data, keys, value, text)
        override_paths[".".join(keys)] = text
    return validate_data(data, display_path(path), chain=chain, overrides=override_paths)


def validate_data(
    data: dict[str, Any],
    file: str | None = None,
    *,
    chain: Sequence[Path] = (),
    overrides: dict[str, str] | None = None,
) -> "RunConfig":
    """Validate already-parsed config data, raising :class:`ConfigError`.

    ``chain`` (the files it came from, child first) and ``overrides`` (dotted
    path -> ``--set`` text) let each error point at the line or flag behind it.
    """
    from rlcli.config.schema import RunConfig

    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        issues = [_issue(err, list(chain), overrides or {}) for err in exc.errors(include_url=False)]
        raise ConfigError(file, issues) from None


def _issue(err: dict[str, Any], chain: list[Path], overrides: dict[str, str]) -> ConfigIssue:
    loc = tuple(str(part) for part in err["loc"])
    ctx = err.get("ctx") or {}
    kind = err["type"]
    if kind == "cross_field":
        path, message = ctx["field"], ctx["message"]
    else:
        path = ".".join(_without_tags(loc))
        message = _message(kind, err, loc)
    source, line = _locate(path, chain, overrides)
    return ConfigIssue(message, path=path, source=source, line=line)


def _without_tags(loc: tuple[str, ...]) -> list[str]:
    from rlcli.algos import ALGORITHMS

    # Pydantic puts the discriminator tag in the location: ("algo", "ppo", "gamma").
    if len(loc) > 1 and loc[0] == "algo" and loc[1] in ALGORITHMS:
        return [loc[0], *loc[2:]]
    return list(loc)


def _message(kind: str, err: dict[str, Any], loc: tuple[str, ...]) -> str:
    from rlcli.algos import ALGORITHMS

    known_algos = ", ".join(ALGORITHMS)
    if kind == "extra_forbidden":
        return _unknown_key(loc)
    if kind == "union_tag_invalid":
        return f"unknown algorithm {err['ctx']['tag']!r}; known algorithms: {known_algos}"
    if kind == "union_tag_not_found":
        return f"missing algo.name; known algorithms: {known_algos}"
    if kind == "missing":
        if len(loc) == 1:
            return f"missing required section [{loc[0]}]"
        return "missing required field"
    if kind == "value_error":
        return str(err["ctx"]["error"])
    got = repr(err.get("input"))
    if len(got) > 60:
        got = got[:57] + "..."
    return f"{err['msg']} (got {got})"


def _unknown_key(loc: tuple[str, ...]) -> str:
    from rlcli.algos import ALGORITHMS

    key = loc[-1]
    model = _model_at(loc[:-1])
    allowed = sorted(model.model_fields) if model is not None else []
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    if len(loc) == 1:
        return f"unknown section [{key}]{hint}; allowed sections: {', '.join(allowed)}"
    where = ".".join(_without_tags(loc[:-1]))
    message = f"unknown key {key!r} in [{where}]{hint}"
    if loc[0] == "algo" and len(loc) > 2:
        owners = [n for n, m in ALGORITHMS.items() if key in _algo_config(m).model_fields and n != loc[1]]
        if owners:
            message += f"; {key!r} belongs to {', '.join(owners)}, not {loc[1]}"
    return f"{message}; allowed keys: {', '.join(allowed)}"


def _algo_config(module: Any) -> type[BaseModel]:
    return module.CONFIG


def _model_at(loc: tuple[str, ...]) -> type[BaseModel] | None:
    from rlcli.algos import ALGORITHMS
    from rlcli.config.schema import RunConfig

    model: type[BaseModel] = RunConfig
    parts = list(loc)
    while parts:
        part = parts.pop(0)
        if part == "algo" and model is RunConfig:
            if not parts or parts[0] not in ALGORITHMS:
                return None
            model = _algo_config(ALGORITHMS[parts.pop(0)])
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
    for key, text in overrides.items():
        if key == path or key.startswith(path + ".") or path.startswith(key + "."):
            return f"--set {text}", None
    parts = path.split(".") if path else []
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
