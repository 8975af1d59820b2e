"""Write a resolved config back as TOML (the inverse of loading, defaults included)."""

from __future__ import annotations

from typing import Any

from rlcli.config.model import toml_key, toml_value
from rlcli.config.schedules import schedule_key
from rlcli.config.schema import RunConfig


def to_toml(cfg: RunConfig) -> str:
    """The TOML text of ``cfg``: one table per section, every field, unset options omitted."""
    # Python mode keeps NaN and inf (JSON mode would turn them into null); TOML has both.
    blocks = [_table([name], value) for name, value in written(cfg).items()]
    return "\n".join(block for block in blocks if block)


def written(cfg: RunConfig, *, mode: str = "python") -> dict[str, Any]:
    """``cfg`` as the data a config file holds (``model_dump`` in ``mode``), which loads back as ``cfg``:
    every field but unset options (None) and what this kind of run may not set."""
    # An offline run's [collector] is an unused default, which its config may not set; each kind of run
    # schedules in its own unit, and may not set the other kind's key (every_frames online, every_steps offline).
    other = {schedule_key(offline=not cfg.offline)}
    exclude: dict[str, Any] = {"checkpoint": other, "eval": other} | ({"collector": True} if cfg.offline else {})
    return cfg.model_dump(mode=mode, exclude_none=True, exclude=exclude)


def _table(path: list[str], table: dict[str, Any]) -> str:
    scalars = [f"{toml_key(k)} = {toml_value(v)}" for k, v in table.items() if not _is_subtable(v)]
    lines = [f"[{'.'.join(toml_key(p) for p in path)}]", *scalars, ""]
    text = "\n".join(lines)
    for key, value in table.items():
        if _is_subtable(value):
            text += "\n" + _table([*path, key], value)
    return text


def _is_subtable(value: Any) -> bool:
    return isinstance(value, dict) and bool(value)
