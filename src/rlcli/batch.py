"""The batch type, TensorDict, imported without loading ``torch._dynamo``.

Importing tensordict costs about 0.9 s on a 2-core machine, nearly all of it
``torch._dynamo``, which two decorators that tensordict applies at import time pull in:
``torch.compiler.assume_constant_result`` (which only sets an attribute on the function)
and ``torch.compiler.allow_in_graph`` (which registers the function with dynamo's
tracing rules). While tensordict imports, this module puts in their place one that does
exactly the first and one that defers the second; :func:`prepare_compile` registers the
deferred functions and must run before ``torch.compile`` traces TensorDict code. Training
does not compile, so a run never loads dynamo. Measured: tensordict's import 0.85 -> 0.12 s.
If tensordict was imported before rlcli, nothing is changed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch
import torch.compiler

_DEFERRED: list[Callable[..., Any]] = []
"""Functions tensordict passed to ``allow_in_graph`` at import, not yet registered."""


def _mark_constant(fn: Callable[..., Any]) -> Callable[..., Any]:
    # What torch._dynamo.assume_constant_result does, without importing dynamo.
    fn._dynamo_marked_constant = True  # type: ignore[attr-defined]
    return fn


def _defer_allow_in_graph(fn: Any) -> Any:
    if isinstance(fn, (list, tuple)):
        return type(fn)(_defer_allow_in_graph(f) for f in fn)
    _DEFERRED.append(fn)
    return fn


def _import_tensordict() -> None:
    if "tensordict" in sys.modules or "torch._dynamo" in sys.modules:
        return
    saved = torch.compiler.allow_in_graph, torch.compiler.assume_constant_result
    torch.compiler.allow_in_graph, torch.compiler.assume_constant_result = _defer_allow_in_graph, _mark_constant
    try:
        import tensordict  # noqa: F401
    finally:
        torch.compiler.allow_in_graph, torch.compiler.assume_constant_result = saved


def prepare_compile() -> None:
    """Register with dynamo what tensordict deferred at import; call before ``torch.compile``."""
    while _DEFERRED:
        torch.compiler.allow_in_graph(_DEFERRED.pop())


_import_tensordict()

from tensordict import MemoryMappedTensor, TensorDict  # noqa: E402

__all__ = ["MemoryMappedTensor", "TensorDict", "prepare_compile"]
