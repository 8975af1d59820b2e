"""Where config files are: the preset folders, a preset by name, a run folder's config, and
a file's path as errors show it."""

from __future__ import annotations

import difflib
from pathlib import Path

from rlcli.config.errors import InputError, single


def preset_dirs() -> list[Path]:
    """Folders searched for a preset named without a path, first match wins."""
    package = Path(__file__).resolve().parent.parent
    candidates = [Path.cwd() / "presets", package / "presets", package.parents[1] / "presets"]
    seen: list[Path] = []
    for folder in candidates:
        if folder.is_dir() and folder.resolve() not in seen:
            seen.append(folder.resolve())
    return seen


def available_presets() -> list[str]:
    """Names of the presets found in :func:`preset_dirs`."""
    return sorted({p.stem for d in preset_dirs() for p in d.glob("*.toml") if not p.stem.startswith("_")})


def run_config_file(run_dir: Path) -> Path:
    """The ``config.toml`` of the run folder ``run_dir``.

    Raises:
        InputError: ``run_dir`` is missing, not a folder, or holds no config.toml.
    """
    what = f"run folder {run_dir}"
    if not run_dir.is_dir():
        raise InputError(what, "no such folder" if not run_dir.exists() else "not a folder")
    config_file = run_dir / "config.toml"
    if not config_file.is_file():
        raise InputError(what, "has no config.toml: it is not a run folder made by rlcli train")
    return config_file


def find_preset(name: str | Path) -> Path:
    """The file for ``name``: an existing path, or a bare preset name such as ``ppo_cartpole``."""
    path = Path(name)
    if path.is_file():
        return path
    text = str(name)
    looks_like_path = text.endswith(".toml") or "/" in text or "\\" in text
    if not looks_like_path:
        for folder in preset_dirs():
            candidate = folder / f"{text}.toml"
            if candidate.is_file():
                return candidate
        known = available_presets()
        close = difflib.get_close_matches(text, known, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise single(
            text,
            f"no preset named {text!r}; {hint}known presets: {', '.join(known) or 'none'}",
        )
    if path.is_dir():
        raise single(text, "is a folder, not a TOML file")
    raise single(text, "file not found")


def display_path(path: Path) -> str:
    """``path`` relative to the working folder when it lies below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
