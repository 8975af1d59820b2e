"""``rlcli export`` itself: a run's policy traced and written (whole or not at all) as ``.onnx`` or
``.pt2``, with its metadata inside; the checks of the command's options before anything is traced."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from rlcli.config.algos import SAMPLING
from rlcli.config.errors import InputError, check_output_file
from rlcli.envs import check_run_packages, import_env_packages
from rlcli.files import replacing
from rlcli.models.gsde import HELD_NOISE, StateDependentNoise
from rlcli.play.export.deployed_policy import DeployedPolicy, deployed, dynamic_shapes
from rlcli.play.export.forensics import failure
from rlcli.play.policy_file import EXPORT_EXTRA, METADATA
from rlcli.trainer.checkpoint_folder import find_checkpoint

FORMATS = ("onnx", "pt2")


_NO_DRAWS = (
    "has no distribution to draw from: each of its draws is its mode. A file samples where the policy does: "
    f"{SAMPLING}. Export without --stochastic"
)


@dataclass(frozen=True)
class ExportReport:
    """What :func:`export_policy` wrote, and from what."""

    path: Path
    format: str
    checkpoint: Path
    run_folder: Path
    metadata: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "format": self.format,
            "checkpoint": str(self.checkpoint),
            "run_folder": str(self.run_folder),
            "metadata": self.metadata,
        }


def export_policy(
    path: str | Path,
    *,
    format: str = "onnx",
    out: str | Path | None = None,
    batch: int | None = None,
    stochastic: bool = False,
    env_packages: Sequence[str] | None = None,
) -> ExportReport:
    """Write the policy of a run folder (its ``final.pt``, else its newest checkpoint) or of a checkpoint file
    as ``format`` (``onnx`` or ``pt2``) at ``out`` (default: ``policy.<format>`` in the run folder).

    ``batch`` fixes the batch size the file takes; None (the default) leaves it dynamic. The file holds the
    deterministic policy, as ``rlcli eval`` plays it by default; ``stochastic`` makes it draw its actions as
    ``rlcli eval --stochastic`` does (:meth:`Agent.actions` with ``deterministic`` off), from its runtime's
    default generator: onnxruntime's (``onnxruntime.set_seed``) or torch's (``torch.manual_seed``).

    Raises:
        InputError: a missing path or a folder that is not a run; an unknown format; the export extra missing
            for ``onnx``; ``stochastic`` for a policy without a distribution (:attr:`Agent.samples`); an output
            that cannot be written; an operator the exporter cannot lower or trace
            (with the module it sits in).
        CheckpointError: a damaged checkpoint, or one of another rlcli checkpoint format.
        ConfigError: the run's config does not load or build here.
    """
    folder, weights = _checked(path, format, batch)
    out = Path(out) if out is not None else folder / f"policy.{format}"
    check_output_file(out, flag="--out", suffix=f".{format}")
    check_run_packages(folder, list(env_packages or []))
    import_env_packages(list(env_packages or []))
    module, examples, metadata = deployed(folder, weights, stochastic=stochastic)
    if stochastic and not module.agent.samples:
        raise InputError("--stochastic", f"the {metadata['algo']} policy of {folder} {_NO_DRAWS}")
    if stochastic and any(isinstance(part, StateDependentNoise) for part in module.agent.modules()):
        raise InputError("--stochastic", f"the {metadata['algo']} policy of {folder} {HELD_NOISE}")
    if batch is not None:
        examples = tuple(example[:1].expand(batch, *example.shape[1:]).contiguous() for example in examples)
    metadata["batch"] = "dynamic" if batch is None else batch
    write_file(module, examples, out, metadata, format=format, dynamic=batch is None)
    return ExportReport(out, format, weights, folder, metadata)


def export_team(
    path: str | Path,
    *,
    format: str = "onnx",
    out: str | Path | None = None,
    batch: int | None = None,
    stochastic: bool = False,
    env_packages: Sequence[str] | None = None,
) -> list[ExportReport]:
    """Write the policies of a team run as ``policy.<group>.<format>`` files (``policy.<group>.<agent>.<format>``
    for a group whose agents have their own weights) in the folder ``out`` (default: the run folder), each as
    :func:`export_policy` writes a single agent's (:mod:`rlcli.play.export.teams` for the inputs).

    Raises:
        InputError: as :func:`export_policy`; a run that is not a team run; ``out`` that is a file.
    """
    from rlcli.play.export.teams import group_policies

    folder, weights = _checked(path, format, batch)
    target = Path(out) if out is not None else folder
    if target.exists() and not target.is_dir():
        raise InputError("--out", f"{target} is a file: a team run's policies go into a folder, one file per group")
    check_run_packages(folder, list(env_packages or []))
    import_env_packages(list(env_packages or []))
    files = group_policies(folder, weights, stochastic=stochastic)
    if stochastic and not all(module.agent.samples for _, module, _, _ in files):
        raise InputError("--stochastic", f"the {files[0][3]['algo']} policies of {folder} {_NO_DRAWS}")
    target.mkdir(parents=True, exist_ok=True)
    reports = []
    for stem, module, examples, metadata in files:
        if batch is not None:
            examples = tuple(example[:1].expand(batch, *example.shape[1:]).contiguous() for example in examples)
        metadata["batch"] = "dynamic" if batch is None else batch
        file = target / f"policy.{stem}.{format}"
        check_output_file(file, flag="--out", suffix=f".{format}")
        write_file(module, examples, file, metadata, format=format, dynamic=batch is None)
        reports.append(ExportReport(file, format, weights, folder, metadata))
    return reports


def _checked(path: str | Path, format: str, batch: int | None) -> tuple[Path, Path]:
    """The run folder and checkpoint of ``path``, after the checks of the options (format, batch, the export
    extra for onnx) that come before anything is read."""
    if format not in FORMATS:
        raise InputError("--format", f"{format!r} is not a format rlcli exports; allowed: {', '.join(FORMATS)}")
    if batch is not None and batch < 1:
        raise InputError("--batch", f"{batch} rows: give a batch of at least 1, or dynamic")
    if format == "onnx":
        _check_extra()
    return find_checkpoint(Path(path))


def exports(path: str | Path, **options: Any) -> list[ExportReport]:
    """What ``rlcli export`` writes: :func:`export_team`'s files for a team run, else :func:`export_policy`'s one."""
    from rlcli.config.load import load_config
    from rlcli.envs.teams import team_kind

    folder, _ = find_checkpoint(Path(path))
    config = folder / "config.toml"
    if config.is_file() and team_kind(load_config(config).env.id) is not None:
        return export_team(path, **options)
    return [export_policy(path, **options)]


def write_file(
    module: DeployedPolicy, examples: tuple[torch.Tensor, ...], out: Path, metadata: dict, *, format: str, dynamic: bool
) -> None:
    """Trace ``module`` on ``examples`` and write it as ``format`` at ``out`` (whole or not at all), with
    ``metadata`` inside; ``dynamic`` leaves the batch dimension free."""
    # Traced without autograd: the agent's own no_grad then changes no state, and leaves no grad-mode
    # region in the graph (which torch.export.load cannot read back).
    with _quiet(), torch.no_grad():
        if format == "pt2":
            _write_pt2(module, examples, out, metadata, dynamic=dynamic)
        else:
            _write_onnx(module, examples, out, metadata, dynamic=dynamic)


def _write_pt2(module: DeployedPolicy, examples, out: Path, metadata: dict, *, dynamic: bool) -> None:
    try:
        program = torch.export.export(module, examples, dynamic_shapes=dynamic_shapes(examples, dynamic))
    except Exception as exc:  # noqa: BLE001 - the tracer's many error types: report where
        raise failure(exc, module, examples, metadata, format="pt2", dynamic=dynamic) from None
    with replacing(out) as temporary:
        torch.export.save(program, str(temporary), extra_files={"rlcli.json": json.dumps(metadata)})


def _write_onnx(module: DeployedPolicy, examples, out: Path, metadata: dict, *, dynamic: bool) -> None:
    try:
        program = torch.onnx.export(
            module,
            examples,
            dynamo=True,
            input_names=module.input_names,
            output_names=module.output_names,
            dynamic_shapes=dynamic_shapes(examples, dynamic),
            verbose=False,
        )
    except Exception as exc:  # noqa: BLE001 - the exporter's many error types: report where, suggest pt2
        raise failure(exc, module, examples, metadata, format="onnx", dynamic=dynamic) from None
    # With dynamo=True the exporter returns its ONNXProgram (None only from the TorchScript exporter).
    assert program is not None
    program.model.metadata_props[METADATA] = json.dumps(metadata)
    # The ONNX program saves to a path only.
    with replacing(out) as temporary:
        program.save(str(temporary))


@contextlib.contextmanager
def _quiet():
    """The exporters' progress lines, warnings and error logs kept off the console: they log through
    ``warnings`` and ``logging``, and torch.export prints a failed trace's partial graph to stderr. An
    export's failure is reported by :func:`~rlcli.play.export.forensics.failure` instead."""
    names = ("torch.onnx", "torch.export", "torch._export", "torch.fx.experimental.symbolic_shapes", "onnxscript")
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        for logger in loggers:
            logger.setLevel(logging.CRITICAL)
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels):
                logger.setLevel(level)


def _check_extra() -> None:
    try:
        import onnx  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError:
        raise InputError("--format onnx", f"needs the export extra: {EXPORT_EXTRA}") from None
