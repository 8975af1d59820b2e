"""What went wrong when an exporter failed: the operator it could not lower or trace, the submodule
of the policy that calls it (read from the graph ``torch.export`` traces, or from the traceback), and
what to try instead, as one :class:`~rlcli.config.errors.InputError`."""

from __future__ import annotations

import re

import torch

from rlcli.config.errors import InputError
from rlcli.play.export.deployed_policy import DeployedPolicy, dynamic_shapes


def failure(exc: Exception, module: DeployedPolicy, examples, metadata: dict, *, format: str, dynamic: bool):
    """An InputError for an exporter's failure on ``module``: the operator it could not lower and the
    submodule that calls it, where they can be found, and what to try instead."""
    chain: list[BaseException] = [exc]
    while chain[-1].__cause__ is not None and len(chain) < 8:
        chain.append(chain[-1].__cause__)
    found = re.search(r"op='([\w.]+)'", " ".join(str(error) for error in chain))
    operator = found.group(1) if found else None
    where = _calling_module(module, examples, operator, dynamic) if operator else None
    where = where or _raising_module(chain, module) or f"agent ({type(module.agent).__name__})"
    detail = (str(chain[-1]).strip().splitlines() or [""])[0][:200]
    what = f"{operator}, called in {where}," if operator else where
    hints = ["try --format pt2"] if format == "onnx" else []
    hints += ["export without --stochastic"] if module.stochastic else []
    tool = "the ONNX exporter cannot lower" if format == "onnx" else "torch.export cannot trace"
    return InputError(
        f"--format {format}",
        f"{tool} {what} of the {metadata.get('algo', 'run')} policy ({type(chain[-1]).__name__}: {detail})"
        + ("; " + ", or ".join(hints) if hints else ""),
    )


def _calling_module(module: DeployedPolicy, examples, operator: str, dynamic: bool) -> str | None:
    """The innermost submodule of ``module`` whose forward calls ``operator`` (``aten.cummax``), read from the
    graph torch.export traces, as ``path (Class)``; None where it cannot be traced or found."""
    try:
        program = torch.export.export(module, examples, dynamic_shapes=dynamic_shapes(examples, dynamic))
    except Exception:  # noqa: BLE001 - only a hint for an error already being reported
        return None
    for node in program.graph.nodes:
        if str(node.target).split(".")[:2] == operator.split(".")[:2] and node.meta.get("nn_module_stack"):
            path, kind = list(node.meta["nn_module_stack"].values())[-1]
            return f"{path or 'the policy'} ({str(getattr(kind, '__name__', kind)).rsplit('.', 1)[-1]})"
    return None


def _raising_module(chain: list[BaseException], module: DeployedPolicy) -> str | None:
    """The innermost submodule of ``module`` whose code was running when an error of ``chain`` was raised
    (``path (Class)``), or None."""
    names = {id(sub): name for name, sub in module.named_modules() if name}
    found = None
    for error in chain:
        trace = error.__traceback__
        while trace is not None:
            owner = trace.tb_frame.f_locals.get("self")
            if id(owner) in names:
                found = f"{names[id(owner)]} ({type(owner).__name__})"
            trace = trace.tb_next
    return found
