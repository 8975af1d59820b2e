"""``rlcli export``: a trained run's policy as one file that maps raw env observations to env actions,
for ONNX runtimes (``.onnx``, through ``torch.onnx``'s dynamo exporter) or torch (``.pt2``, a
``torch.export`` program that ``torch.export.load`` reads and AOTInductor can compile).

The file holds what evaluation applies between an observation and the env: the saved observation
normalization, the encoder (uint8 frames scaled inside), the policy, its mode (argmax, the squashed or
plain Gaussian mean; or, exported ``stochastic``, a draw from the policy, as ``rlcli eval --stochastic``
takes it) and the clipping to the action bounds. Every algorithm's agent goes through the one
:meth:`rlcli.algos.Agent.actions` path that evaluation calls, so nothing here is per algorithm.

Inputs, in order (names as in the ONNX file and in the metadata's ``inputs``):

- ``obs``: [B, *obs] in the observation space's dtype; a ``Dict`` observation gives one input per key,
  ``obs.<key>``, in the space's key order;
- ``action_mask``: [B, A] bool (True: allowed), where the run acted under masks;
- ``memory`` ([B, *state] float32) and ``first`` ([B] bool), for a policy with memory: the state the last
  call returned, zeros before an env's first step, and whether the observation starts an episode (the
  state is then zeroed inside, as training did).

Outputs: ``action`` [B, *action] in the action space's dtype (int64 for discrete actions), then
``next_memory`` (the state to pass as ``memory`` to the next call) for a policy with memory.

The metadata (ONNX ``metadata_props["rlcli"]``; the pt2 archive's extra file ``rlcli.json``) is a JSON
object: env id, spaces, the inputs' and outputs' names, the algorithm, the rlcli and torch versions, the
run's config hash and frames.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import re
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from gymnasium import spaces
from torch import nn

from rlcli import __version__
from rlcli.carry import Carry
from rlcli.config.algos import SAMPLING
from rlcli.config.errors import InputError, check_output_file
from rlcli.config.load import load_config
from rlcli.envs import check_run_packages, describe_space, import_env_packages
from rlcli.envs.masks import mask_size
from rlcli.models.gsde import HELD_NOISE, StateDependentNoise
from rlcli.observations import leaves
from rlcli.play.playback import built_agent, restored
from rlcli.play.policy_file import EXPORT_EXTRA, METADATA
from rlcli.trainer import checkpoint

FORMATS = ("onnx", "pt2")
EXAMPLE_BATCH = 2
"""Rows of the example observations a dynamic-batch export traces with (torch.export specializes sizes 0 and 1)."""


_NO_DRAWS = (
    "has no distribution to draw from: each of its draws is its mode. A file samples where the policy does: "
    f"{SAMPLING}. Export without --stochastic"
)


class DeployedPolicy(nn.Module):
    """``agent``'s evaluation actions for raw observations: :meth:`Agent.actions` in its deterministic mode
    (or, ``stochastic``, drawn from the policy with torch's default generator), then the clipping to the Box
    bounds that the evaluator and collector apply. See the module's docstring for the inputs and outputs."""

    def __init__(
        self,
        agent: nn.Module,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        *,
        masked: bool,
        stochastic: bool = False,
    ):
        super().__init__()
        self.agent = agent
        self.stochastic = stochastic
        self.generator: torch.Generator | None = None
        """Where a stochastic module draws from in eager calls (tests compare a file's draws with the
        generator path that evaluation takes); None, torch's default generator, is what a file holds."""
        self.keys = list(observation_space.spaces) if isinstance(observation_space, spaces.Dict) else None
        self.masked = masked
        self.remembers = getattr(agent, "memory", None) is not None
        bounded = isinstance(action_space, spaces.Box)
        self.register_buffer("low", torch.as_tensor(action_space.low, dtype=torch.float32) if bounded else None)
        self.register_buffer("high", torch.as_tensor(action_space.high, dtype=torch.float32) if bounded else None)

    @property
    def input_names(self) -> list[str]:
        names = ["obs"] if self.keys is None else [f"obs.{key}" for key in self.keys]
        return names + (["action_mask"] if self.masked else []) + (["memory", "first"] if self.remembers else [])

    @property
    def output_names(self) -> list[str]:
        return ["action"] + (["next_memory"] if self.remembers else [])

    def forward(self, *inputs: torch.Tensor):
        count = 1 if self.keys is None else len(self.keys)
        observation, rest = inputs[:count], list(inputs[count:])
        if self.keys is None:
            obs = observation[0]
        else:
            from tensordict import TensorDict

            obs = TensorDict(dict(zip(self.keys, observation)), batch_size=[observation[0].shape[0]])
        carry = Carry(observation[0].shape[0], observation[0].device)
        if self.masked:
            carry.mask = rest.pop(0)
        if self.remembers:
            carry.memory, carry.first = rest
        action = self.agent.actions(obs, deterministic=not self.stochastic, generator=self.generator, carry=carry)
        if self.low is not None:
            action = torch.clamp(action, self.low, self.high)
        return (action, carry.memory) if self.remembers else action


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
    if format not in FORMATS:
        raise InputError("--format", f"{format!r} is not a format rlcli exports; allowed: {', '.join(FORMATS)}")
    if batch is not None and batch < 1:
        raise InputError("--batch", f"{batch} rows: give a batch of at least 1, or dynamic")
    if format == "onnx":
        _check_extra()
    folder, weights = checkpoint.find_checkpoint(Path(path))
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


def deployed(
    folder: Path, weights: Path, *, stochastic: bool = False
) -> tuple[DeployedPolicy, tuple[torch.Tensor, ...], dict[str, Any]]:
    """The run's :class:`DeployedPolicy` on the CPU (weights from ``weights``; deterministic unless
    ``stochastic``), example inputs of :data:`EXAMPLE_BATCH` rows, and the file's metadata."""
    config_file = folder / "config.toml"
    cfg = load_config(config_file)
    agent, observation_space, action_space, payload = restored(
        cfg, weights, torch.device("cpu"), render=False, source=str(config_file)
    )
    masked = _run_masks(folder) and mask_size(action_space) is not None
    module = DeployedPolicy(agent, observation_space, action_space, masked=masked, stochastic=stochastic).eval()
    examples = examples_for(module, observation_space, action_space)
    metadata = {
        "env": cfg.env.id,
        "algo": cfg.algo.name,
        "observation_space": describe_space(observation_space),
        "action_space": describe_space(action_space),
        "inputs": module.input_names,
        "outputs": module.output_names,
        "stochastic": stochastic,
        "rlcli": __version__,
        "torch": torch.__version__,
        "config_sha256": hashlib.sha256(config_file.read_bytes()).hexdigest(),
        "frames": int(payload.get("frames", 0)),
        "checkpoint": weights.name,
    }
    if module.remembers:
        metadata["memory_shape"] = list(examples[-2].shape[1:])
    return module, examples, metadata


def deployed_untrained(cfg, *, source: str, masked: bool = False, stochastic: bool = False):
    """(``cfg``'s untrained agent, as ``build_run`` builds it, as a :class:`DeployedPolicy` on the CPU, the
    env's observation space, its action space): what the bench and the tests export without a run."""
    agent, observation_space, action_space = built_agent(cfg, torch.device("cpu"), source=source)
    module = DeployedPolicy(agent.eval(), observation_space, action_space, masked=masked, stochastic=stochastic)
    module = module.eval()
    return module, observation_space, action_space


def examples_for(module: DeployedPolicy, observation_space, action_space) -> tuple[torch.Tensor, ...]:
    """Example inputs of :data:`EXAMPLE_BATCH` rows: observations sampled from the space, every action
    allowed, fresh memory."""
    found = leaves(observation_space)
    subspaces = observation_space.spaces if module.keys is not None else {None: observation_space}
    pairs = found if isinstance(found, dict) else {None: found}
    examples = []
    for name, (shape, dtype) in pairs.items():
        sample = [torch.as_tensor(subspaces[name].sample()) for _ in range(EXAMPLE_BATCH)]
        examples.append(torch.stack(sample).to(dtype).reshape(EXAMPLE_BATCH, *shape))
    if module.masked:
        examples.append(torch.ones(EXAMPLE_BATCH, mask_size(action_space), dtype=torch.bool))
    if module.remembers:
        carry = Carry.of(module.agent, EXAMPLE_BATCH, torch.device("cpu"))
        examples += [carry.memory, carry.first]
    return tuple(examples)


def _run_masks(folder: Path) -> bool:
    """Whether the run acted under action masks (``run.json``'s resolved ``action_mask``)."""
    try:
        return json.loads((folder / "run.json").read_text(encoding="utf-8")).get("action_mask") is not None
    except (OSError, ValueError):
        return False


def _dynamic_shapes(examples, dynamic: bool):
    if not dynamic:
        return None
    rows = torch.export.Dim("batch")
    # One entry, for forward's *inputs: a tuple with each input's batch dimension.
    return (tuple({0: rows} for _ in examples),)


def _write_pt2(module: DeployedPolicy, examples, out: Path, metadata: dict, *, dynamic: bool) -> None:
    try:
        program = torch.export.export(module, examples, dynamic_shapes=_dynamic_shapes(examples, dynamic))
    except Exception as exc:  # noqa: BLE001 - the tracer's many error types: report where
        raise _failure(exc, module, examples, metadata, format="pt2", dynamic=dynamic) from None
    _atomic(out, lambda tmp: torch.export.save(program, tmp, extra_files={"rlcli.json": json.dumps(metadata)}))


def _write_onnx(module: DeployedPolicy, examples, out: Path, metadata: dict, *, dynamic: bool) -> None:
    try:
        program = torch.onnx.export(
            module,
            examples,
            dynamo=True,
            input_names=module.input_names,
            output_names=module.output_names,
            dynamic_shapes=_dynamic_shapes(examples, dynamic),
            verbose=False,
        )
    except Exception as exc:  # noqa: BLE001 - the exporter's many error types: report where, suggest pt2
        raise _failure(exc, module, examples, metadata, format="onnx", dynamic=dynamic) from None
    program.model.metadata_props[METADATA] = json.dumps(metadata)
    _atomic(out, lambda tmp: program.save(tmp))


def _failure(exc: Exception, module: DeployedPolicy, examples, metadata: dict, *, format: str, dynamic: bool):
    """An InputError for an exporter's failure on ``module``: the operator it could not lower and the
    submodule that calls it, where they can be found, and what to try instead."""
    chain = [exc]
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
        program = torch.export.export(module, examples, dynamic_shapes=_dynamic_shapes(examples, dynamic))
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


def _atomic(out: Path, write) -> None:
    """Run ``write`` on a temporary path beside ``out``, then move it there: a file is whole or absent."""
    with tempfile.NamedTemporaryFile(dir=out.parent, prefix=f".{out.name}.", suffix=out.suffix, delete=False) as tmp:
        temporary = Path(tmp.name)
    try:
        write(str(temporary))
        temporary.replace(out)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _quiet():
    """The exporters' progress lines, warnings and error logs kept off the console: they log through
    ``warnings`` and ``logging``, and torch.export prints a failed trace's partial graph to stderr. An
    export's failure is reported by :func:`_failure` instead."""
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
