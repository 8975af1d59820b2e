"""The repository's folders the tests read, and the test env packages made importable in this process."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRESETS = ROOT / "presets"
PRESET_FILES = sorted(PRESETS.glob("*.toml"))
BROKEN_CONFIGS = ROOT / "tests" / "broken_configs"
ENV_PACKAGES = ROOT / "tests" / "envpkg"


def env_packages_importable() -> None:
    """Put ``tests/envpkg`` on sys.path for ``--env-package rlcli_test_envs`` in this process."""
    if str(ENV_PACKAGES) not in sys.path:
        sys.path.insert(0, str(ENV_PACKAGES))
