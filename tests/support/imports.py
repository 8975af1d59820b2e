"""An optional package made to look uninstalled, for the messages that name a missing extra."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def package_hidden(package: str, *importers: str) -> Iterator[None]:
    """Within the block, ``import package`` fails as it does where the package is not installed.

    The modules named ``importers`` (and their submodules), which import ``package`` when they are
    themselves imported, are dropped from ``sys.modules`` so that the next import runs again and
    meets the missing package; every module is as before once the block ends.
    """

    def ours(name: str) -> bool:
        return any(name == prefix or name.startswith(prefix + ".") for prefix in (package, *importers))

    saved = {name: module for name, module in sys.modules.items() if ours(name)}
    for name in saved:
        del sys.modules[name]
    # None in sys.modules makes ``import package`` raise ImportError (ModuleNotFoundError).
    sys.modules[package] = None
    try:
        yield
    finally:
        for name in [name for name in sys.modules if ours(name)]:
            del sys.modules[name]
        sys.modules.update(saved)
