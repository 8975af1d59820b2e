"""Compare a bench report with a saved baseline: change per figure, and a regression gate."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlcli.bench import UNITS, moved_key
from rlcli.config.errors import InputError

FORMAT = "rlcli-bench/1"


@dataclass(frozen=True)
class Comparison:
    """One figure on both sides; ``None`` where a side lacks it."""

    key: str
    unit: str
    current: float | None
    baseline: float | None
    change_pct: float | None
    verdict: str
    """``better``, ``worse``, ``same`` (within noise) or ``only here`` / ``only in baseline``."""


def load_report(path: Path) -> dict[str, Any]:
    """Read a report written by ``rlcli bench --json``; anything else is a clear error."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"bench baseline {path}", "file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"bench baseline {path}", f"not a JSON file: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("results"), list):
        raise InputError(
            f"bench baseline {path}", f'not an rlcli bench report (expected "format": "{FORMAT}" and a results list)'
        )
    for index, row in enumerate(data["results"]):
        if not (
            isinstance(row, dict)
            and isinstance(row.get("key"), str)
            and isinstance(row.get("median"), (int, float))
            and row.get("unit") in UNITS
        ):
            raise InputError(
                f"bench baseline {path}", f"results[{index}] lacks a key, a numeric median or a known unit"
            )
    return data


def change(current: dict[str, Any], baseline: dict[str, Any], noise_pct: float) -> tuple[float, str]:
    """Percent change of ``current`` over ``baseline``, signed so that positive is better.

    A change is beyond noise when it exceeds ``noise_pct`` and the two sides'
    [min, max] ranges do not overlap.
    """
    higher = UNITS[current["unit"]]
    old, new = baseline["median"], current["median"]
    pct = (new - old) / old * 100 if old else 0.0
    better_pct = pct if higher else -pct
    overlap = current.get("min", new) <= baseline.get("max", old) and baseline.get("min", old) <= current.get(
        "max", new
    )
    if abs(better_pct) <= noise_pct or overlap:
        return better_pct, "same"
    return better_pct, "better" if better_pct > 0 else "worse"


def compare(current: dict[str, Any], baseline: dict[str, Any], *, noise_pct: float = 5.0) -> list[Comparison]:
    """Every figure of either report, matched by key, in the current report's order; a baseline's
    figure of a suite that moved is matched under its new key (:data:`rlcli.bench.MOVED_SUITES`)."""
    old = {moved_key(row["key"]): row for row in baseline["results"]}
    rows = []
    for row in current["results"]:
        base = old.pop(row["key"], None)
        if base is None:
            rows.append(Comparison(row["key"], row["unit"], row["median"], None, None, "only here"))
            continue
        pct, verdict = change(row, base, noise_pct)
        rows.append(Comparison(row["key"], row["unit"], row["median"], base["median"], pct, verdict))
    for key, base in old.items():
        rows.append(Comparison(key, base["unit"], None, base["median"], None, "only in baseline"))
    return rows


def regressions(rows: list[Comparison], max_regression_pct: float) -> list[Comparison]:
    """Figures worse than the baseline by more than ``max_regression_pct`` percent."""
    return [r for r in rows if r.change_pct is not None and r.change_pct < -max_regression_pct]
