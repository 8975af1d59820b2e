"""What every config section shares: strict validation, the cross-section error, and the
words for values and bounds that show-config, error messages and the generated reference (docs/reference.md) use."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

S = TypeVar("S", bound=BaseModel)


def section(model: type[S], description: str) -> S:
    """A field holding the section ``model``, built from its defaults when the file leaves it out. Typed by
    the bound's constructor: mypy reads a field's default only when written ``default=`` (PEP 681), so a
    model's own signature would have it required, though every section model builds from its defaults."""
    return Field(default_factory=model, description=description)


SECTION = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)
"""Every section's model config.

``strict``: a string is never read as a number or a bool (``num_envs = "16"`` is an
error, not 16), and a float or bool is never an int; an int is still a float, since
TOML writes ``1`` for ``1.0``. ``allow_inf_nan=False``: a coefficient of inf is never meant.
"""


def cross_field_error(problems: list[tuple[str, str]]) -> PydanticCustomError:
    """One error carrying every ``(dotted field, message)`` problem between sections."""
    return PydanticCustomError(
        "cross_field", "{summary}", {"summary": "; ".join(m for _, m in problems), "problems": problems}
    )


def toml_key(key: str) -> str:
    """``key`` as a TOML key: bare when it can be, else quoted."""
    bare = key.replace("_", "").replace("-", "").isalnum() and key.isascii()
    return key if bare else json.dumps(key)


def toml_value(value: Any) -> str:
    """``value`` as a TOML literal (inline tables for dicts).

    Raises:
        TypeError: a value TOML cannot write (None, an object).
    """
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
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


_SIGNS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}


def field_bounds(field: FieldInfo) -> dict[str, Any]:
    """The ``gt``/``ge``/``lt``/``le`` bounds a field declares, in that order."""
    return {
        key: getattr(item, key) for item in field.metadata for key in _SIGNS if getattr(item, key, None) is not None
    }


def range_text(bounds: dict[str, Any], literal: Callable[[Any], str] = toml_value) -> str:
    """Bounds in words: ``0 to 1`` for an inclusive pair, else ``> 0 and <= 1``; empty for none.
    ``literal`` writes each number."""
    if "ge" in bounds and "le" in bounds:
        return f"{literal(bounds['ge'])} to {literal(bounds['le'])}"
    return " and ".join(f"{_SIGNS[key]} {literal(value)}" for key, value in bounds.items())


def auto_or_count(low: int, high: int, what: str) -> Callable[[Any], Any]:
    """A before-validator of a field that takes ``"auto"`` or a whole number of ``what`` from ``low`` to
    ``high``: anything else is one error saying so (not one per member of the union)."""

    def check(value: Any) -> Any:
        if value == "auto" and isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
            return value
        try:
            shown = toml_value(value)
        except (TypeError, ValueError):
            shown = repr(value)
        raise ValueError(f"{shown} is not a number of {what}; allowed: auto, or {low} to {high}")

    return check
