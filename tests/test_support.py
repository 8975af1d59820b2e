"""The tests' own layout (tests/README.md): helpers live in ``tests/support/`` and fixtures in the
``conftest.py`` files, so no file under ``tests/`` imports from a ``conftest`` or from another test
module, and nothing imports a loose helper module beside the tests; ``benchmarks/`` imports nothing
from ``tests/``."""

from __future__ import annotations

import ast
from pathlib import Path

from support.paths import ROOT

TESTS = ROOT / "tests"


def imported_modules(tree: ast.Module, package: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every module an import in ``tree`` may load, function-local ones included:
    ``from a import b`` names both ``a`` and ``a.b`` (``b`` may be a submodule). Relative imports are
    resolved against ``package``, the dotted package of the file (empty for a file directly in its root)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}" if base else alias.name) for alias in node.names]
    return found


def module_file(name: str, root: Path) -> Path | None:
    """The file under ``root`` that ``import name`` loads with ``root`` on sys.path, if there is one."""
    path = root.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def forbidden(target: Path, root: Path) -> str | None:
    """Why a file under ``root`` may not import ``target`` (a file under ``root``), or None if it may."""
    relative = target.relative_to(root)
    if target.name == "conftest.py":
        return "a conftest: fixtures are requested by name, helpers live in tests/support/"
    if target.name.startswith("test_"):
        return "a test module: move what it shares into tests/support/"
    if relative.parts[0] != "support" and target.name != "__init__.py":
        return "a helper outside tests/support/: move it there"
    return None


def import_problems(root: Path) -> list[str]:
    """Every import in a .py file under ``root`` (a tests folder, on sys.path as pytest puts it) of a
    conftest, a test module or a loose helper, as "file:line imports name (why)"."""
    problems = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        package = ".".join(relative.parts[:-1]) if (path.parent / "__init__.py").is_file() else ""
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, name in imported_modules(tree, package):
            target = module_file(name, root)
            why = target is not None and target != path and forbidden(target, root)
            if why:
                problems.append(f"tests/{relative.as_posix()}:{line} imports {name} ({why})")
    return sorted(set(problems))


def test_no_test_file_imports_a_conftest_a_test_module_or_a_loose_helper():
    assert import_problems(TESTS) == []


def test_the_import_check_names_each_kind_of_forbidden_import(tmp_path):
    for folder in ("support", "cli"):
        (tmp_path / folder).mkdir()
    (tmp_path / "cli" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "support" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "support" / "paths.py").write_text("ROOT = 1\n", encoding="utf-8")
    (tmp_path / "conftest.py").write_text("import pytest\n", encoding="utf-8")
    (tmp_path / "cli" / "conftest.py").write_text("X = 1\n", encoding="utf-8")
    (tmp_path / "runs.py").write_text("", encoding="utf-8")
    (tmp_path / "cli" / "test_train.py").write_text("def helper():\n    pass\n", encoding="utf-8")
    (tmp_path / "cli" / "test_eval.py").write_text(
        "from support.paths import ROOT\nfrom cli.test_train import helper\nfrom .conftest import X\n"
        "def test_x():\n    from runs import y\n",
        encoding="utf-8",
    )
    (tmp_path / "test_top.py").write_text("import conftest\nfrom support import paths\n", encoding="utf-8")
    assert import_problems(tmp_path) == [
        "tests/cli/test_eval.py:2 imports cli.test_train (a test module: move what it shares into tests/support/)",
        "tests/cli/test_eval.py:3 imports cli.conftest (a conftest: fixtures are requested by name, "
        "helpers live in tests/support/)",
        "tests/cli/test_eval.py:5 imports runs (a helper outside tests/support/: move it there)",
        "tests/test_top.py:1 imports conftest (a conftest: fixtures are requested by name, "
        "helpers live in tests/support/)",
    ]


def test_no_benchmark_imports_from_tests_or_puts_them_on_its_path():
    tests_modules = {path.stem for path in TESTS.glob("*.py")} | {
        path.name for path in TESTS.iterdir() if path.is_dir() and (path / "__init__.py").is_file()
    }
    problems = []
    for path in sorted((ROOT / "benchmarks").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
        for line, name in imported_modules(tree, ""):
            if name.split(".")[0] in tests_modules | {"support", "tests"}:
                problems.append(f"benchmarks/{path.relative_to(ROOT / 'benchmarks').as_posix()}:{line} imports {name}")
        if '"tests"' in text and "sys.path" in text:
            problems.append(f"benchmarks/{path.relative_to(ROOT / 'benchmarks').as_posix()} puts tests/ on sys.path")
    assert problems == []
