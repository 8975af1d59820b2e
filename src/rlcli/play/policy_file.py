"""Playing a file of ``rlcli export``: :class:`PolicyFile` reads an ``.onnx`` file (through onnxruntime)
or a ``.pt2`` file (through ``torch.export.load``) with its rlcli metadata, and acts as an agent that
:class:`rlcli.play.evaluation.Evaluator` plays (``rlcli eval --policy``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from rlcli.carry import Carry
from rlcli.config.errors import InputError

EXPORT_EXTRA = "pip install 'rlcli[export]' (pip install -e '.[export]' in a clone)"
METADATA = "rlcli"
"""The metadata's key in an ONNX file's ``metadata_props``; in a pt2 archive the extra file ``rlcli.json``."""


class _FileMemory:
    """The zero state of an exported policy with memory, as :class:`rlcli.carry.Carry` asks a memory for it."""

    def __init__(self, shape: Sequence[int]):
        self.shape = tuple(shape)

    def initial(self, n: int, device: torch.device) -> torch.Tensor:
        return torch.zeros(n, *self.shape, device=device)


class PolicyFile:
    """An exported file (``.onnx`` through onnxruntime, ``.pt2`` through ``torch.export.load``) as an agent
    that :class:`rlcli.play.evaluation.Evaluator` plays: ``actions`` feeds it the observations, masks and memory of
    a :class:`Carry` and returns its actions; ``metadata`` is the file's rlcli metadata."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        what = f"--policy {self.path}"
        if not self.path.is_file():
            raise InputError(what, "no such file" if not self.path.exists() else "not a file")
        suffix = self.path.suffix
        if suffix not in (".onnx", ".pt2"):
            raise InputError(what, f"{suffix or 'no suffix'}: give an exported .onnx or .pt2 file (rlcli export)")
        try:
            self.metadata, self._call = opened(self.path)
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged or foreign file fails in the runtime's own ways
            detail = (str(exc).strip().splitlines() or [""])[0][:200]
            raise InputError(what, f"cannot be read as an exported policy ({type(exc).__name__}: {detail})") from None
        shape = self.metadata.get("memory_shape")
        self.memory = None if shape is None else _FileMemory(shape)
        self.stochastic = bool(self.metadata.get("stochastic", False))
        """Whether the file samples its actions (``rlcli export --stochastic``) rather than taking the mode."""
        names = self.metadata["inputs"]
        self._keys = [name.removeprefix("obs.") for name in names if name.startswith("obs.")]
        self._masked = "action_mask" in names

    def actions(self, observation, *, deterministic: bool, generator=None, carry: Carry | None = None) -> torch.Tensor:
        """The file's actions ([N, *action]) for ``observation`` ([N, *obs], or a TensorDict of a Dict's keys);
        ``carry``'s memory moves on. The file's mode is its own (:attr:`stochastic`, drawn from its runtime's
        default generator): ``deterministic`` and ``generator`` are unread."""
        feeds = [observation[key] for key in self._keys] if self._keys else [observation]
        if self._masked:
            # The evaluator passes the carry with the envs' masks to a file that takes them.
            assert carry is not None and carry.mask is not None
            feeds.append(carry.mask)
        if self.memory is not None:
            # A carry made for an agent with memory (Carry.of) holds its state and episode starts.
            assert carry is not None and carry.memory is not None and carry.first is not None
            feeds += [carry.memory, carry.first]
        outputs = self._call([feed.cpu() for feed in feeds])
        if self.memory is not None:
            assert carry is not None and carry.memory is not None  # as above
            carry.memory = outputs[1].to(carry.memory.device)
        return outputs[0]

    def check_run(self, env: str, observation_space: str, action_space: str) -> None:
        """Raise an InputError unless the file was exported for ``env`` with these spaces (their descriptions)."""
        expected = {"env": env, "observation_space": observation_space, "action_space": action_space}
        wrong = [
            f"{key} {self.metadata.get(key)!r} (the run's: {value!r})"
            for key, value in expected.items()
            if self.metadata.get(key) != value
        ]
        if wrong:
            raise InputError(f"--policy {self.path}", "its metadata names another " + ", ".join(wrong))


def opened(path: Path) -> tuple[dict, Callable[[list[torch.Tensor]], list[torch.Tensor]]]:
    """(The rlcli metadata of the exported ``path``, a call of it on its inputs in order that returns its
    outputs): onnxruntime on one thread for ``.onnx``, ``torch.export.load`` for ``.pt2``."""
    return _open_onnx(path) if path.suffix == ".onnx" else _open_pt2(path)


def _open_onnx(path: Path):
    try:
        import onnxruntime
    except ImportError:
        raise InputError(f"--policy {path}", f"playing an .onnx file needs the export extra: {EXPORT_EXTRA}") from None
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    metadata = json.loads(session.get_modelmeta().custom_metadata_map[METADATA])
    names = [entry.name for entry in session.get_inputs()]

    def call(feeds: list[torch.Tensor]) -> list[torch.Tensor]:
        outputs = session.run(None, {name: feed.numpy() for name, feed in zip(names, feeds)})
        return [torch.from_numpy(output) for output in outputs]

    return metadata, call


def _open_pt2(path: Path):
    extra = {"rlcli.json": ""}
    program = torch.export.load(str(path), extra_files=extra)
    metadata = json.loads(extra["rlcli.json"])
    module = program.module()

    def call(feeds: list[torch.Tensor]) -> list[torch.Tensor]:
        with torch.no_grad():
            outputs = module(*feeds)
        return list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]

    return metadata, call
