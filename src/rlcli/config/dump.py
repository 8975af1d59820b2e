"""Write a resolved config back as TOML (the inverse of loading, defaults included)."""

from __future__ import annotations

import json
import math
from typing import Any

from rlcli.config.schema import RunConfig


def to_toml(cfg: RunConfig) -> str:
    """The TOML text of ``cfg``: one table per section, every field, unset options omitted."""
    # Python mode keeps NaN and inf (JSON mode would turn them into null); TOML has both.
    data = cfg.model_dump(exclude_none=True)
    blocks = [_table([name], value) for name, value in data.items()]
    return "\n".join(block for block in blocks if block)


def _table(path: list[str], table: dict[str, Any]) -> str:
    scalars = [f"{_key(k)} = {_value(v)}" for k, v in table.items() if not _is_subtable(v)]
    lines = [f"[{'.'.join(_key(p) for p in path)}]", *scalars, ""]
    text = "\n".join(lines)
    for key, value in table.items():
        if _is_subtable(value):
            text += "\n" + _table([*path, key], value)
    return text


def _is_subtable(value: Any) -> bool:
    return isinstance(value, dict) and bool(value)


def _key(key: str) -> str:
    bare = key.replace("_", "").replace("-", "").isalnum() and key.isascii()
    return key if bare else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        # JSON string escapes are valid TOML basic-string escapes.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")
