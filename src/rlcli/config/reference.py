"""Documentation generated from the code: the config reference, from the pydantic models; the
README's table of the optional extras each shipped preset needs, from the presets; the architecture
page's map of the code, from each package's and root module's docstring; the example preset that the
README and ``docs/config.md`` show, from its file; and the tables of algorithms (the README's, the
masks guide's, the config guide's spaces, the memory guide's), from the config models'
``CAPABILITIES`` (:mod:`rlcli.config.algorithm_tables`).

``python -m rlcli.config.reference --write`` rewrites each generated block, between its ``BEGIN`` and
``END`` markers, of the files of :data:`TARGETS` (or of the files it is given); ``--check``
exits 1 when a block and the code disagree (``tests/test_docs.py`` does the same check).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from rlcli.config.algorithm_tables import masks_markdown, memory_markdown, readme_markdown, spaces_markdown
from rlcli.config.load import preset_extras
from rlcli.config.model import field_bounds, range_text, toml_value
from rlcli.config.presets import available_presets, find_preset

COMMAND = "python -m rlcli.config.reference --write"
TARGETS = (
    Path("docs/reference.md"),
    Path("README.md"),
    Path("docs/architecture/training.md"),
    Path("docs/guides/action-masks.md"),
    Path("docs/config.md"),
    Path("docs/guides/memory.md"),
)
"""The files ``--write`` and ``--check`` read without arguments, from the repository's root."""


def markdown() -> str:
    """The whole reference: one table per section, each algorithm's section, its spaces."""
    from rlcli.algos import ALGORITHMS
    from rlcli.config.fields import ReplayConfig
    from rlcli.config.schema import RunConfig

    parts: list[str] = []
    for name, field in RunConfig.model_fields.items():
        if name == "algo":
            continue
        parts += [f"### `[{name}]`", "", f"{field.description}", "", _table(_model(field.annotation))]
    for name, spec in ALGORITHMS.items():
        config = spec.config
        parts += [
            f'### `[algo]` with `name = "{name}"`',
            "",
            f"{config.model_fields['name'].description} {_spaces(spec.supports)}",
            "",
            _table(config, skip=("name",)),
        ]
    replay_users = [n for n, spec in ALGORITHMS.items() if "replay" in spec.config.model_fields]
    parts += ["### `[algo.replay]`", "", f"The replay buffer of {_words(replay_users)}.", "", _table(ReplayConfig)]
    return "\n".join(parts).rstrip() + "\n"


def _spaces(supports: dict[str, tuple[type, ...]]) -> str:
    def names(role: str) -> str:
        # An observation Box is a vector or an image (docs/config.md, "Spaces"); action Box,
        # MultiDiscrete and MultiBinary spaces are 1-D.
        one_d = ("Box", "MultiDiscrete", "MultiBinary") if role == "action" else ()
        box = "`Box` (vector or image)"
        return " or ".join(
            f"1-D `{c.__name__}`" if c.__name__ in one_d else box if c.__name__ == "Box" else f"`{c.__name__}`"
            for c in supports[role]
        )

    masks = f" Action masks: {names('action_mask')}." if supports.get("action_mask") else ""
    return f"Observations: {names('observation')}. Actions: {names('action')}.{masks}"


def _words(items: list[str]) -> str:
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items)


def _model(annotation: Any) -> type[BaseModel]:
    candidates = [annotation, *get_args(annotation)]
    return next(c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel))


def _table(model: type[BaseModel], skip: tuple[str, ...] = ()) -> str:
    rows = ["| key | type | default | allowed | meaning |", "|---|---|---|---|---|"]
    for key, field in model.model_fields.items():
        if key in skip:
            continue
        cells = [
            f"`{key}`",
            _type(field.annotation),
            _default(field),
            _allowed(field),
            (field.description or "").replace("|", "\\|"),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def _type(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return " or ".join(_type(a) for a in inner)
    if origin is Literal:
        return "string"
    if origin is list:
        return f"list of {_type(args[0])}s" if args else "list"
    if origin is dict or annotation is dict:
        return "table"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    return {int: "integer", float: "number", bool: "boolean", str: "string"}.get(annotation, str(annotation))


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, BaseModel):
        return "(table)"
    return f"`{_literal(value)}`"


def _literal(value: Any) -> str:
    """A TOML literal for the reference, large integers grouped for reading (``1_000_000``)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
        return f"{value:_}"
    return toml_value(value)


def _allowed(field: FieldInfo) -> str:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    if "allowed" in extra:
        return str(extra["allowed"])
    if field.annotation is bool:
        return "`true`, `false`"
    choices = _literals(field.annotation)
    if choices:
        return ", ".join(f"`{_literal(c)}`" for c in choices)
    return range_text(field_bounds(field), _literal) or "any"


def _literals(annotation: Any) -> tuple[Any, ...]:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return args
    if origin in (Union, types.UnionType, list):
        return tuple(c for a in args for c in _literals(a))
    return ()


def extras_markdown() -> str:
    """The table of the optional extras the shipped presets need, one row per extra, from
    :func:`rlcli.config.load.preset_extras`."""
    users: dict[str, list[str]] = {}
    for name in available_presets():
        for extra in preset_extras(name):
            users.setdefault(extra.name, []).append(f"`{name}`")
    rows = ["| extra | presets |", "|---|---|"]
    rows += [f"| `{extra}` | {', '.join(names)} |" for extra, names in sorted(users.items())]
    return "\n".join(rows) + "\n"


def code_map_markdown() -> str:
    """The map of ``src/rlcli``: one row per package and per module at its root, each with the first
    paragraph of its docstring, read from the source (nothing is imported)."""
    package = Path(__file__).resolve().parents[1]
    rows = ["| where | what |", "|---|---|"]
    entries = sorted(p for p in package.iterdir() if (p / "__init__.py").is_file())
    entries += sorted(p for p in package.glob("*.py") if p.name != "__init__.py")
    for path in entries:
        source = path / "__init__.py" if path.is_dir() else path
        doc = ast.get_docstring(ast.parse(source.read_text(encoding="utf-8"))) or ""
        first = _markdown(" ".join(doc.split("\n\n", 1)[0].split())).replace("|", "\\|")
        rows.append(f"| `{path.name}{'/' if path.is_dir() else ''}` | {first} |")
    return "\n".join(rows) + "\n"


def example_markdown() -> str:
    """``presets/ppo_cartpole.toml`` as it is, in a TOML code block: the first config file a reader sees."""
    return f"```toml\n{find_preset('ppo_cartpole').read_text(encoding='utf-8').rstrip()}\n```\n"


def _markdown(text: str) -> str:
    """Sphinx markup as Markdown: ``:mod:`~a.b``` as `b`, ``:class:`a.B``` as `a.B`, double backquotes as one."""
    text = re.sub(r":[a-z]+:`~[\w.]*?([\w]+)`", r"`\1`", text)
    return re.sub(r":[a-z]+:`([^`]+)`", r"`\1`", text).replace("``", "`")


@dataclass(frozen=True)
class Block:
    """A generated part of a Markdown file, between two marker lines."""

    name: str
    render: Callable[[], str]

    @property
    def begin(self) -> str:
        return f"<!-- BEGIN {self.name}: generated by `{COMMAND}` -->"

    @property
    def end(self) -> str:
        return f"<!-- END {self.name} -->"


REFERENCE = Block("config reference", markdown)
EXTRAS = Block("extras", extras_markdown)
CODE_MAP = Block("code map", code_map_markdown)
EXAMPLE = Block("example preset", example_markdown)
ALGORITHMS_TABLE = Block("algorithms", readme_markdown)
MASKS_TABLE = Block("masks", masks_markdown)
SPACES = Block("spaces", spaces_markdown)
MEMORY = Block("memory", memory_markdown)
BLOCKS = (REFERENCE, EXTRAS, CODE_MAP, EXAMPLE, ALGORITHMS_TABLE, MASKS_TABLE, SPACES, MEMORY)


def current(text: str, block: Block = REFERENCE) -> str | None:
    """The content of ``block`` in ``text`` (between its markers), or None without markers."""
    if block.begin not in text or block.end not in text:
        return None
    return text.split(block.begin, 1)[1].split(block.end, 1)[0].strip("\n") + "\n"


def rewritten(text: str, block: Block = REFERENCE) -> str:
    """``text`` with the content of ``block`` rendered anew."""
    head, rest = text.split(block.begin, 1)
    tail = rest.split(block.end, 1)[1]
    return f"{head}{block.begin}\n\n{block.render()}\n{block.end}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlcli.config.reference", description=__doc__)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the generated blocks of each file")
    mode.add_argument("--check", action="store_true", help="exit 1 when a generated block is out of date")
    parser.add_argument(
        "files",
        nargs="*",
        type=Path,
        metavar="FILE",
        help=f"default: {' '.join(map(str, TARGETS))}",
    )
    args = parser.parse_args(argv)
    stale = []
    for path in args.files or TARGETS:
        if not path.is_file():
            print(f"{path}: no such file (run from the repository's root, or name the files)", file=sys.stderr)
            return 2
        text = path.read_text(encoding="utf-8")
        blocks = [block for block in BLOCKS if current(text, block) is not None]
        if not blocks:
            markers = "\n".join(f"{block.begin}\n{block.end}" for block in BLOCKS)
            print(f"{path}: no generated block; add the marker lines of one:\n{markers}", file=sys.stderr)
            return 2
        if args.write:
            for block in blocks:
                text = rewritten(text, block)
            path.write_text(text, encoding="utf-8")
            continue
        stale += [f"{path} ({block.name})" for block in blocks if current(text, block) != block.render()]
    if stale:
        files = "".join(f" {path}" for path in args.files)
        print(f"out of date: {', '.join(stale)}; run {COMMAND}{files}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
