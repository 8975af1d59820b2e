"""Config errors that name the file, the dotted field, the value and what is allowed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in a config: where it is and what is wrong."""

    message: str
    path: str = ""
    """Dotted field path such as ``algo.clip_epsilon``; empty for file-level problems."""
    source: str | None = None
    """The file (or ``--set KEY=VALUE``) the offending value came from."""
    line: int | None = None
    column: int | None = None

    def render(self) -> str:
        where = self.source or ""
        if where and self.line is not None:
            where += f":{self.line}" + (f":{self.column}" if self.column is not None else "")
        if not self.path:
            return f"{where}: {self.message}" if where else self.message
        return f"{self.path}: {self.message}" + (f"  [{where}]" if where else "")


@dataclass
class ConfigError(Exception):
    """A config that cannot be loaded; ``issues`` lists every problem found."""

    file: str | None
    issues: list[ConfigIssue] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.render())

    def render(self) -> str:
        head = f"invalid config {self.file}" if self.file else "invalid config"
        body = "\n".join(f"  {issue.render()}" for issue in self.issues)
        return f"{head}\n{body}" if body else head

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "errors": [
                {
                    "path": i.path,
                    "message": i.message,
                    "source": i.source,
                    "line": i.line,
                    "column": i.column,
                }
                for i in self.issues
            ],
        }


def single(file: str | Path | None, message: str, **where: Any) -> ConfigError:
    """A ConfigError with one issue."""
    name = str(file) if file is not None else None
    # The header already names the file; repeat it only to anchor a line number.
    default_source = name if where.get("line") is not None else None
    return ConfigError(name, [ConfigIssue(message, source=where.pop("source", default_source), **where)])


class InputError(ConfigError):
    """Bad input that is not a config: an output folder, a bench baseline, a flag's value.

    It exits 2 like a :class:`ConfigError` (and is one, for ``except`` clauses), but says
    what it is about instead of "invalid config": ``bench baseline b.json: not a JSON file``.
    """

    def __init__(self, what: str, message: str):
        self.what = what
        super().__init__(None, [ConfigIssue(message)])

    def render(self) -> str:
        return f"{self.what}: {self.issues[0].message}"


def folder_error(output_dir: str | Path, exc: OSError) -> InputError:
    """The error for a run folder that cannot be created or written under ``output_dir``."""
    return InputError(
        f"run folder under {str(output_dir)!r}",
        f"cannot write it: {exc.strerror or exc}; choose another with --out DIR or run.output_dir",
    )


def check_output_file(path: Path, *, flag: str, suffix: str) -> None:
    """Raise an InputError unless ``path`` can receive a new ``suffix`` file: the right suffix, an
    existing folder, and not a folder itself. ``flag`` is the option that named it (``-o``)."""
    if path.suffix.lower() != suffix:
        raise InputError(f"{flag} {path}", f"give a file name ending in {suffix}")
    if not path.parent.is_dir():
        raise InputError(f"{flag} {path}", f"folder {path.parent} does not exist")
    if path.is_dir():
        raise InputError(f"{flag} {path}", f"is a folder; give a file name ending in {suffix}")
