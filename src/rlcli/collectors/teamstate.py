"""The state of team envs as plain data, for checkpoints that resume mid-episode.

Neither PettingZoo nor VMAS has a ``get_state``. Their envs keep what a step changes in Python objects: a
VMAS simulator's entities hold torch tensors (positions, velocities, the step counts) and its scenario
more of them; an MPE2 env's world holds numpy arrays, its ``np_random`` generator and step counters; rlcli's
adapters hold their buffers. So a walk over the object graph from the team envs down, which saves every
attribute that holds plain data (numbers, strings, tensors, numpy arrays and generators, Python's and
numpy's legacy random states, and containers of them) and recurses into the objects it meets, then sets
them back into the same graph built again from the same config, restores it. Tensors are copied into the
tensors the rebuilt graph holds, so that objects sharing a tensor still share it.

What the walk does not reach is not captured: a subprocess, a native simulator's memory. The test suite
checks the result where it counts: a resumed team run's metrics are byte-identical to an unbroken run's.

Everything is encoded as tensors and plain containers, so a checkpoint holding it loads with
``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import types
from collections import deque
from typing import Any

import numpy as np
import torch

from rlcli.collectors.envstate import EnvStateError, decode_plain, encode_plain

_SKIPPED = (types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType, type, torch.device)


def capture(root: Any) -> dict[str, Any]:
    """The plain data of ``root``'s object graph (see the module docstring)."""
    return _object(root, {})


def restore(root: Any, saved: dict[str, Any]) -> None:
    """Set what :func:`capture` saved back into ``root``'s graph, built again from the same config.

    Raises:
        EnvStateError: the graph differs from the saved one (another env, other settings).
    """
    _restore_object(root, saved, "env")


def _object(obj: Any, seen: dict[int, bool]) -> dict[str, Any]:
    seen[id(obj)] = True
    attrs = {}
    for name, value in _attributes(obj):
        encoded = _value(value, seen)
        if encoded is not None:
            attrs[name] = encoded
    shared = {}
    for name, value in _class_containers(obj):
        if id(value) not in seen:
            seen[id(value)] = True
            encoded = _value(value, seen)
            if encoded is not None:
                shared[name] = encoded
    return {"kind": "object", "class": type(obj).__name__, "attrs": attrs, "class_attrs": shared}


def _class_containers(obj: Any) -> list[tuple[str, Any]]:
    """The mutable containers ``obj``'s classes hold (state every instance shares, such as VMAS's random
    generators' states, a class-level list its environments seed from), by name."""
    found: dict[str, Any] = {}
    own = vars(obj) if hasattr(obj, "__dict__") else {}
    for klass in type(obj).__mro__[:-1]:
        for name, value in vars(klass).items():
            if name.startswith("__") or name in own or name in found:
                continue
            if isinstance(value, (list, dict, deque)):
                found[name] = value
    return sorted(found.items())


def _attributes(obj: Any) -> list[tuple[str, Any]]:
    try:
        return sorted(vars(obj).items())
    except TypeError:
        return []


def _value(value: Any, seen: dict[int, bool]) -> dict[str, Any] | None:
    """``value`` encoded, or None where it is left out (callables, modules, what was met already)."""
    if isinstance(value, torch.Tensor):
        return {"kind": "tensor", "value": value.detach().to("cpu", copy=True)}
    plain = encode_plain(value)
    if plain is not None:
        return plain
    if isinstance(value, np.random.RandomState):
        state = value.get_state()
        return {"kind": "random_state", "value": encode_plain(state)}
    if isinstance(value, (list, tuple, deque)):
        items = [_value(item, seen) for item in value]
        return {"kind": "sequence", "value": items}
    if isinstance(value, dict):
        keys = list(value)
        if not all(isinstance(key, (str, int)) for key in keys):
            return None
        return {"kind": "dict", "keys": keys, "value": [_value(value[key], seen) for key in keys]}
    if isinstance(value, _SKIPPED) or callable(value) and not hasattr(value, "__dict__"):
        return None
    if id(value) in seen or not hasattr(value, "__dict__"):
        return None
    return _object(value, seen)


def _restore_object(obj: Any, saved: dict[str, Any], where: str) -> None:
    if type(obj).__name__ != saved["class"]:
        raise EnvStateError(
            f"{where}: the saved env holds a {saved['class']}, the env built now a {type(obj).__name__}"
        )
    for name, encoded in saved["attrs"].items():
        current = getattr(obj, name, None)
        restored = _restore_value(current, encoded, f"{where}.{name}")
        if restored is not current and not _same(restored, current):
            setattr(obj, name, restored)
    containers = dict(_class_containers(obj))
    for name, encoded in saved.get("class_attrs", {}).items():
        if name in containers:
            # In place: the container is the class's, shared by every instance.
            _restore_value(containers[name], encoded, f"{where}.{type(obj).__name__}.{name}")


def _same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are equal plain values (a tuple rebuilt equal to the one held: nothing to set, which
    a frozen dataclass would refuse)."""
    if type(a) is not type(b) or not isinstance(a, (tuple, str, int, float, bool)):
        return False
    try:
        return bool(a == b)
    except (RuntimeError, ValueError, TypeError):
        return False


def _restore_value(current: Any, encoded: dict[str, Any] | None, where: str) -> Any:
    """The value ``encoded`` stands for, restored into ``current`` where it can be (tensors copied in place,
    objects and containers walked); returns what the attribute should hold."""
    if encoded is None:
        return current
    kind = encoded["kind"]
    if kind == "tensor":
        value = encoded["value"]
        if isinstance(current, torch.Tensor) and current.shape == value.shape and current.dtype == value.dtype:
            current.copy_(value)
            return current
        device = current.device if isinstance(current, torch.Tensor) else value.device
        return value.to(device)
    if kind == "array" and isinstance(current, np.ndarray):
        value = decode_plain(encoded, None)
        if current.shape == value.shape and current.dtype == value.dtype and current.flags.writeable:
            # In place: an adapter's arrays may be views of its torch buffers.
            np.copyto(current, value)
            return current
    if kind == "object":
        if current is None or not hasattr(current, "__dict__"):
            raise EnvStateError(f"{where}: the saved env holds a {encoded['class']} there, the env built now none")
        _restore_object(current, encoded, where)
        return current
    if kind == "random_state":
        state = decode_plain(encoded["value"], None)
        generator = current if isinstance(current, np.random.RandomState) else np.random.RandomState()
        generator.set_state(state)
        return generator
    if kind == "sequence":
        items = encoded["value"]
        if not isinstance(current, (list, tuple, deque)) or len(current) != len(items):
            return _rebuilt_sequence(current, items, where)
        restored = [_restore_value(item, saved, f"{where}[{i}]") for i, (item, saved) in enumerate(zip(current, items))]
        if isinstance(current, list):
            current[:] = restored
            return current
        if isinstance(current, deque):
            current.clear()
            current.extend(restored)
            return current
        return tuple(restored)
    if kind == "dict":
        if not isinstance(current, dict):
            current = {}
        restored_dict = {}
        for key, saved in zip(encoded["keys"], encoded["value"]):
            restored_dict[key] = _restore_value(current.get(key), saved, f"{where}[{key!r}]")
        current.clear()
        current.update(restored_dict)
        return current
    return decode_plain(encoded, current)


def _rebuilt_sequence(current: Any, items: list, where: str) -> Any:
    """A sequence whose length changed since the graph was built (agents that left): plain items are rebuilt,
    objects are not (the env built now cannot hold them)."""
    values = []
    for i, saved in enumerate(items):
        if saved is not None and saved["kind"] == "object":
            raise EnvStateError(f"{where}[{i}]: the saved env holds an object there, the env built now does not")
        values.append(_restore_value(None, saved, f"{where}[{i}]"))
    if isinstance(current, tuple):
        return tuple(values)
    if isinstance(current, deque):
        return deque(values, maxlen=current.maxlen)
    return values
