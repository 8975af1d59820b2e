"""The shipped presets by whether this machine has their extras, and the small config tests start from."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from rlcli.config.load import preset_extras
from support.paths import PRESET_FILES


def missing_extras(preset: Path) -> list[str]:
    """The optional extras ``preset`` needs (``rlcli.config.load.preset_extras``) that are not installed
    here. `.ci/run` installs every extra; without one, the tests that build such a preset are skipped."""
    missing = []
    for extra in preset_extras(preset):
        try:
            importlib.import_module(extra.module)
        except ImportError:
            missing.append(extra.name)
    return missing


MISSING_EXTRAS = {p: missing_extras(p) for p in PRESET_FILES}
BUILDABLE_PRESETS = [p for p in PRESET_FILES if not MISSING_EXTRAS[p]]
PRESETS_TO_BUILD = [
    pytest.param(
        p,
        id=p.stem,
        marks=pytest.mark.skipif(bool(MISSING_EXTRAS[p]), reason=f"needs the {', '.join(MISSING_EXTRAS[p])} extra"),
    )
    for p in PRESET_FILES
]

# A small valid config for tests to start from: every size agrees with every other.
MINIMAL_TOML = """\
[env]
id = "CartPole-v1"
num_envs = 4

[algo]
name = "ppo"
minibatch_size = 32

[collector]
frames_per_batch = 64
total_frames = 640
"""


def require_extra(module: str) -> None:
    """Fail, not skip, when an extra that the README's test command installs is missing: the
    eval --video and plot tests must run wherever the tests are said to pass."""
    try:
        importlib.import_module(module)
    except ImportError:
        pytest.fail(
            f"{module} is missing: install the extras with the README's test command "
            "(pip install -e '.[test,plot,video,export]')"
        )
