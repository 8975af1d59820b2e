"""What every config section shares: strict validation and the cross-section error."""

from __future__ import annotations

from pydantic import ConfigDict
from pydantic_core import PydanticCustomError

SECTION = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)
"""Every section's model config.

``strict``: a string is never read as a number or a bool (``num_envs = "16"`` is an
error, not 16), and a float or bool is never an int; an int is still a float, since
TOML writes ``1`` for ``1.0``. ``allow_inf_nan=False``: a coefficient of inf is never meant.
"""


def cross_field_error(problems: list[tuple[str, str]]) -> PydanticCustomError:
    """One error carrying every ``(dotted field, message)`` problem between sections."""
    return PydanticCustomError("cross_field", "{summary}",
                               {"summary": "; ".join(m for _, m in problems), "problems": problems})
