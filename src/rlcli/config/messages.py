"""Config problems as messages: each pydantic error in words, with the file and line (or the
``--set`` flag) behind the field it names.

A message says what is wrong and what is allowed, in the words of a TOML user: ``expected an
integer such as 16``, ``0.5 is out of range; allowed: 0 to 1``, ``unknown key; did you mean lr?``.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from pydantic import BaseModel

from rlcli.config.errors import ConfigIssue
from rlcli.config.model import field_bounds, range_text, toml_value
from rlcli.config.presets import display_path

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_ASSIGN = re.compile(r"^\s*((?:[A-Za-z0-9_\-]+|\"[^\"]*\")(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|\"[^\"]*\"))*)\s*=")


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


def issues_of(err: ErrorDetails, chain: list[Path], overrides: dict[str, str]) -> list[ConfigIssue]:
    """The issues of one pydantic error (a cross-section error carries several), each located.

    Args:
        err: one entry of ``ValidationError.errors()``.
        chain: the files the config came from, child first.
        overrides: dotted path -> the ``--set`` text or flag that set it.
    """
    loc = tuple(str(part) for part in err["loc"])
    if err["type"] == "cross_field":
        return [issue_at(path, message, chain, overrides) for path, message in err["ctx"]["problems"]]
    # List items read as TOML users index them: network.hidden_sizes[0].
    path = ""
    for part in _without_tags(loc):
        path += f"[{part}]" if part.isdigit() and path else ("." if path else "") + part
    return [issue_at(path, field_message(err["type"], err, loc), chain, overrides)]


def issue_at(path: str, message: str, chain: list[Path], overrides: dict[str, str]) -> ConfigIssue:
    """``message`` about the dotted field ``path``, located at the flag or the line that set it."""
    source, line = _locate(path, chain, overrides)
    return ConfigIssue(message, path=path, source=source, line=line)


def _without_tags(loc: tuple[str, ...]) -> list[str]:
    from rlcli.config.algos import ALGO_CONFIGS

    # Pydantic puts the discriminator tag in the location: ("algo", "ppo", "gamma").
    if len(loc) > 1 and loc[0] == "algo" and loc[1] in ALGO_CONFIGS:
        return [loc[0], *loc[2:]]
    return list(loc)


def field_message(kind: str, err: ErrorDetails, loc: tuple[str, ...]) -> str:
    from rlcli.config.algos import ALGO_CONFIGS

    known_algos = ", ".join(ALGO_CONFIGS)
    if kind == "extra_forbidden":
        return unknown_key(loc)
    if kind == "union_tag_invalid":
        name = (err.get("input") or {}).get("name") if isinstance(err.get("input"), dict) else None
        if name is not None and not isinstance(name, str):
            return (
                f'name = {_shown(name)} is not a string; write it in quotes, such as name = "ppo"; '
                f"known algorithms: {known_algos}"
            )
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
        side, size = (
            ("at least", ctx.get("min_length")) if kind == "string_too_short" else ("at most", ctx.get("max_length"))
        )
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


def unknown_key(loc: tuple[str, ...]) -> str:
    from rlcli.config.algos import ALGO_CONFIGS, WITH_GSDE

    key = loc[-1]
    if loc[0] == "algo" and len(loc) == 3 and key in ("use_sde", "sde_sample_freq"):
        return (
            f"{loc[1]} has no gSDE ({key}); the algorithms with gSDE (generalized state-dependent exploration, "
            f"for Box actions): {', '.join(WITH_GSDE)}"
        )
    model = _model_at(loc[:-1])
    allowed = sorted(model.model_fields) if model is not None else []
    if key in _RENAMED and _RENAMED[key][0] in allowed:
        new, why = _RENAMED[key]
        return f"{key!r} is now {new} ({why})"
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


# Keys rlcli itself once had, with their new name and why it changed.
_RENAMED = {
    "gae_lambda": ("return_lambda", "the lambda of value_target gae and td_lambda alike"),
}

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
    prefixes: list[tuple[str, ...]] = [(section,) for section in RunConfig.model_fields if section != "algo"]
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
            for inner in nested.model_fields if nested is not None else ():
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
