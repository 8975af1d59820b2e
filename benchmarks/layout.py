"""Lines per module and per function under ``src/rlcli``, against the limits of STYLE.md, and its
import cycles.

A module past about 400 lines becomes a package of the same name; a function past about 60
lines is split (its body is counted, docstring included: the signature, one parameter a line as
``ruff format`` writes a long one, is a declaration, not code to read); no import runs back up the layers (a function-local import that hides a cycle is
still a cycle). This prints the largest modules and functions and exits 1 when one is over its
limit and not named in ``EXCEPTIONS`` with its reason, or when modules import each other in a
cycle. Imports under ``if TYPE_CHECKING:`` count too: a module that needs another's types depends
on it as much as one that calls it, and a cycle hidden there is still a cycle.

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
    sizes = [
        Size(str(path.relative_to(root)), len(path.read_text(encoding="utf-8").splitlines()))
        for path in sorted(root.rglob("*.py"))
    ]
    return sorted(sizes, key=lambda s: -s.lines)


def function_sizes(root: Path = ROOT) -> list[Size]:
    """Every function and method under ``root`` (``module.py:Class.method``), with its lines from
    the first of its body (its docstring, if any) to its last, largest first."""
    sizes = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        sizes.extend(_functions(tree, str(path.relative_to(root)) + ":", ""))
    return sorted(sizes, key=lambda s: -s.lines)


def _functions(node: ast.AST, prefix: str, scope: str) -> list[Size]:
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(Size(prefix + scope + child.name, child.end_lineno - child.body[0].lineno + 1))
            found.extend(_functions(child, prefix, scope + child.name + "."))
        elif isinstance(child, ast.ClassDef):
            found.extend(_functions(child, prefix, scope + child.name + "."))
        else:
            found.extend(_functions(child, prefix, scope))
    return found


def imports(root: Path = ROOT, package: str = "rlcli") -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports, at the top, inside functions or under
    ``if TYPE_CHECKING:``."""
    modules = {_module_name(path, root, package): path for path in sorted(root.rglob("*.py"))}
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[name] = {
            target
            for target in _imported(tree, name, path.name == "__init__.py", set(modules))
            if target in modules and target != name
        }
    return graph


def _module_name(path: Path, root: Path, package: str) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.AST, module: str, is_package: bool, modules: set[str]) -> list[str]:
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import):
            found.extend(alias.name for alias in child.names)
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:
                anchor = module.split(".")[: len(module.split(".")) - child.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            # "from a import b": module a.b when b is one, else a.
            found.extend(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in child.names)
        found.extend(_imported(child, module, is_package, modules))
    return found


def import_cycles(root: Path = ROOT) -> list[list[str]]:
    """Each cycle of modules that import one another (strongly connected groups of two or more)."""
    graph = imports(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def over_limits(root: Path = ROOT) -> list[str]:
    """One line for each module or function over its limit that ``EXCEPTIONS`` does not name."""
    over = [
        f"module {s.name}: {s.lines} lines (limit {MODULE_LINES})"
        for s in module_sizes(root)
        if s.lines > MODULE_LINES and s.name not in EXCEPTIONS
    ]
    over += [
        f"function {s.name}: {s.lines} lines (limit {FUNCTION_LINES})"
        for s in function_sizes(root)
        if s.lines > FUNCTION_LINES and s.name not in EXCEPTIONS
    ]
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
    cycles = import_cycles()
    for cycle in cycles:
        print(f"CYCLE: {' <-> '.join(cycle)}")
    return 1 if over or cycles else 0


if __name__ == "__main__":
    sys.exit(main())
