"""Lines per module and per function under ``src/rlcli``, against the limits of STYLE.md.

A module past about 400 lines becomes a package of the same name; a function past about 60
lines is split. This prints the largest of each and exits 1 when one is over its limit and not
named in ``EXCEPTIONS`` with its reason.

    python benchmarks/layout.py            # the ten largest modules and functions, and any over
    python benchmarks/layout.py --all      # every module and function
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "rlcli"
MODULE_LINES = 400
FUNCTION_LINES = 60
# "path/relative/to/src/rlcli.py" or "path.py:qualified.name" -> why it may stay over its limit.
EXCEPTIONS: dict[str, str] = {}


@dataclass(frozen=True)
class Size:
    name: str
    lines: int


def module_sizes(root: Path = ROOT) -> list[Size]:
    """Every module under ``root`` with its line count, largest first."""
    sizes = [Size(str(path.relative_to(root)), len(path.read_text(encoding="utf-8").splitlines()))
             for path in sorted(root.rglob("*.py"))]
    return sorted(sizes, key=lambda s: -s.lines)


def function_sizes(root: Path = ROOT) -> list[Size]:
    """Every function and method under ``root`` (``module.py:Class.method``), with its lines from
    its ``def`` to its last line (decorators and docstring included), largest first."""
    sizes = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        sizes.extend(_functions(tree, str(path.relative_to(root)) + ":", ""))
    return sorted(sizes, key=lambda s: -s.lines)


def _functions(node: ast.AST, prefix: str, scope: str) -> list[Size]:
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
            found.append(Size(prefix + scope + child.name, child.end_lineno - first + 1))
            found.extend(_functions(child, prefix, scope + child.name + "."))
        elif isinstance(child, ast.ClassDef):
            found.extend(_functions(child, prefix, scope + child.name + "."))
        else:
            found.extend(_functions(child, prefix, scope))
    return found


def over_limits(root: Path = ROOT) -> list[str]:
    """One line for each module or function over its limit that ``EXCEPTIONS`` does not name."""
    over = [f"module {s.name}: {s.lines} lines (limit {MODULE_LINES})" for s in module_sizes(root)
            if s.lines > MODULE_LINES and s.name not in EXCEPTIONS]
    over += [f"function {s.name}: {s.lines} lines (limit {FUNCTION_LINES})" for s in function_sizes(root)
             if s.lines > FUNCTION_LINES and s.name not in EXCEPTIONS]
    return over


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="list every module and function")
    args = parser.parse_args()
    count = None if args.all else 10
    for title, sizes in (("modules", module_sizes()), ("functions", function_sizes())):
        print(f"largest {title}:")
        for size in sizes[:count]:
            print(f"  {size.lines:5}  {size.name}")
    for name, reason in EXCEPTIONS.items():
        print(f"excepted: {name}: {reason}")
    over = over_limits()
    for line in over:
        print(f"OVER: {line}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
