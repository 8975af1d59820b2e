"""Validate many config files at once, as ``rlcli validate`` and CI do."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rlcli.config.errors import ConfigError, ConfigIssue
from rlcli.config.load import load_config
from rlcli.config.presets import display_path, preset_dirs


@dataclass(frozen=True)
class CheckResult:
    """The outcome for one file: ``issues`` is empty when it is valid."""

    file: str
    issues: tuple[ConfigIssue, ...] = ()
    summary: str = ""

    @property
    def ok(self) -> bool:
        return not self.issues


def expand_paths(paths: Sequence[str | Path]) -> list[Path]:
    """Files as given; folders become their ``*.toml`` files, recursively.

    Inside folders, files whose name starts with ``_`` are partial bases meant
    for ``extends`` and are skipped.
    """
    if not paths:
        local = Path("presets")
        paths = [local] if local.is_dir() else preset_dirs()[:1]
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(p for p in sorted(path.rglob("*.toml")) if not p.name.startswith("_"))
        else:
            files.append(path)
    return files


def check_files(
    paths: Sequence[str | Path], *, build: bool = False, overrides: Sequence[str] = ()
) -> list[CheckResult]:
    """Load (and with ``build`` construct) every config under ``paths``, each with the
    ``--set`` style ``overrides`` applied."""
    results = []
    for file in expand_paths(paths):
        name = display_path(file) if file.exists() else str(file)
        try:
            cfg = load_config(file, overrides)
            summary = f"{cfg.algo.name} on {cfg.env.id}"
            if build:
                # The training stack loads only when something is built.
                from rlcli.run import check_build

                summary = check_build(cfg, source=name)
        except ConfigError as exc:
            results.append(CheckResult(name, tuple(exc.issues)))
            continue
        results.append(CheckResult(name, summary=summary))
    return results
