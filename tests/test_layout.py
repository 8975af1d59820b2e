"""STYLE's size limits, checked by ``benchmarks/layout.py`` over ``src/rlcli``."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_layout():
    if "layout" in sys.modules:
        return sys.modules["layout"]
    spec = importlib.util.spec_from_file_location("layout", ROOT / "benchmarks" / "layout.py")
    module = importlib.util.module_from_spec(spec)
    # Registered first: its dataclasses look their module up by name.
    sys.modules["layout"] = module
    spec.loader.exec_module(module)
    return module


def test_no_module_over_400_lines_and_no_function_over_60_but_the_named_exceptions():
    assert load_layout().over_limits() == []


def test_the_check_counts_modules_and_functions_as_written(tmp_path):
    layout = load_layout()
    package = tmp_path / "pkg"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    (package / "big.py").write_text(
        "class C:\n    @staticmethod\n    def method():\n"
        + body.replace("    x", "        x")
        + "\n\n"
        + "def short():\n    return 1\n"
        + "\n" * 340,
        encoding="utf-8",
    )
    sizes = {s.name: s.lines for s in layout.function_sizes(package)}
    assert sizes == {"big.py:C.method": 61, "big.py:short": 1}
    # 3 + 61 lines of the class, a blank, 2 of short and 340 blank lines.
    assert layout.module_sizes(package)[0].lines == 407
    over = layout.over_limits(package)
    assert over == ["module big.py: 407 lines (limit 400)", "function big.py:C.method: 61 lines (limit 60)"]


def test_no_modules_import_each_other_even_from_inside_a_function():
    assert load_layout().import_cycles() == []


def test_the_cycle_check_sees_function_local_and_type_checking_imports(tmp_path):
    layout = load_layout()
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "a.py").write_text("from rlcli import b\n", encoding="utf-8")
    (package / "b.py").write_text("def f():\n    from rlcli.a import x\n", encoding="utf-8")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rlcli import d\n", encoding="utf-8"
    )
    (package / "d.py").write_text("from rlcli import c\n", encoding="utf-8")
    (package / "e.py").write_text("from rlcli import a\n", encoding="utf-8")
    assert layout.import_cycles(package) == [["rlcli.a", "rlcli.b"], ["rlcli.c", "rlcli.d"]]
