"""The state of gymnasium envs as plain data, for checkpoints that resume mid-episode.

Gymnasium has no ``get_state``/``set_state``. What it allows is this: a Python env keeps
its state in instance attributes (CartPole's ``state`` and step counters, ``TimeLimit``'s
elapsed steps, the ``np_random`` generator, ``RecordEpisodeStatistics``' windows), so a
walk over the wrapper chain that saves every attribute holding plain data (numbers,
strings, numpy arrays and scalars, numpy generators, and tuples, lists and deques of
them) and sets them back restores it exactly. What lives outside Python attributes is
not captured: a subprocess (``async`` vectorization), a physics engine's native state
(MuJoCo's ``MjData``, Box2D worlds). :func:`capture` says whether it captured the
sub-envs; the caller re-seeds the envs when it did not.

Everything is encoded as tensors and plain containers, so a checkpoint holding it loads
with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import torch

_PLAIN = (bool, int, float, str, type(None))
_SIGNED = {"u2": np.int16, "u4": np.int32, "u8": np.int64}
"""The signed type of each unsigned width that torch's pickling cannot carry."""


class EnvStateError(Exception):
    """Saved env state that does not fit the envs built now (another wrapper chain or env)."""


def _encode(value: Any) -> Any:
    """``value`` as tensors and plain containers, tagged by kind; None when it is not plain data."""
    # Before the plain types: np.float64 is a float subclass, and pickles as a numpy global.
    if isinstance(value, np.generic):
        item = value.item()
        return {"kind": "scalar", "dtype": value.dtype.str, "value": item} if isinstance(item, _PLAIN) else None
    if isinstance(value, _PLAIN):
        return {"kind": "value", "value": value}
    if isinstance(value, np.ndarray):
        array = np.array(value, copy=True)
        signed = _SIGNED.get(array.dtype.str[1:])
        if signed is not None:
            # uint16/32/64 tensors do not survive pickling (torch.distributed's object collectives): their bits
            # are kept as the signed type of the same width, and viewed back on decode.
            return {"kind": "array", "value": torch.from_numpy(array.view(signed)), "dtype": array.dtype.str}
        try:
            return {"kind": "array", "value": torch.from_numpy(array)}
        except TypeError:
            return None
    if isinstance(value, np.random.Generator):
        return {"kind": "generator", "value": value.bit_generator.state}
    if isinstance(value, (tuple, list, deque)):
        items = [_encode(item) for item in value]
        if any(item is None for item in items):
            return None
        kind = "deque" if isinstance(value, deque) else type(value).__name__
        return {"kind": kind, "value": items, "maxlen": value.maxlen if isinstance(value, deque) else None}
    return None


def _decode(encoded: dict[str, Any], current: Any) -> Any:
    """The value ``encoded`` stands for; a generator's state is set into ``current`` in place."""
    kind, value = encoded["kind"], encoded["value"]
    if kind == "value":
        return value
    if kind == "array":
        array = value.numpy().copy()
        return array.view(np.dtype(encoded["dtype"])) if "dtype" in encoded else array
    if kind == "scalar":
        return np.dtype(encoded["dtype"]).type(value)
    if kind == "generator":
        generator = current if isinstance(current, np.random.Generator) else np.random.default_rng()
        if generator.bit_generator.state.get("bit_generator") != value.get("bit_generator"):
            raise EnvStateError(
                f"a {value.get('bit_generator')} generator cannot be restored into "
                f"{generator.bit_generator.state.get('bit_generator')}"
            )
        generator.bit_generator.state = value
        return generator
    items = [_decode(item, None) for item in value]
    if kind == "deque":
        return deque(items, maxlen=encoded["maxlen"])
    return tuple(items) if kind == "tuple" else items


def _chain(obj: Any) -> list[Any]:
    """``obj`` and every env it wraps, outermost first."""
    chain = [obj]
    while hasattr(obj, "env") and obj.env is not obj:
        obj = obj.env
        chain.append(obj)
    return chain


def _capture_chain(obj: Any, depth: int | None = None) -> list[dict[str, Any]]:
    """The attributes of plain data of ``obj`` and the envs it wraps, the outermost ``depth`` layers."""
    layers = []
    for layer in _chain(obj)[:depth]:
        attrs = {}
        for name, value in vars(layer).items():
            encoded = _encode(value)
            if encoded is not None:
                attrs[name] = encoded
        layers.append({"class": type(layer).__name__, "attrs": attrs})
    return layers


def _restore_chain(obj: Any, layers: list[dict[str, Any]]) -> None:
    chain = _chain(obj)[: len(layers)]
    saved = [layer["class"] for layer in layers]
    built = [type(layer).__name__ for layer in chain]
    if saved != built:
        raise EnvStateError(f"the saved envs are {' > '.join(saved)}, the envs built now are {' > '.join(built)}")
    for layer, state in zip(chain, layers):
        for name, encoded in state["attrs"].items():
            setattr(layer, name, _decode(encoded, getattr(layer, name, None)))


def capture(envs: Any) -> dict[str, Any]:
    """The plain-data state of a vector env: its wrapper chain, and each sub-env's when the
    sub-envs live in this process (``sync``); ``exact`` says whether the sub-envs were covered.

    The base vector env of subprocess envs (``async``) is left out: its arrays are views of the
    memory its workers write, and setting a copy in their place would detach it from them.
    """
    chain = _chain(envs)
    inner = chain[-1]
    subs = getattr(inner, "envs", None)
    in_process = subs is not None or not hasattr(inner, "processes")
    return {
        "vector": _capture_chain(envs, depth=len(chain) if in_process else len(chain) - 1),
        "sub_envs": [_capture_chain(env) for env in subs] if subs is not None else None,
        "exact": in_process and not _native_state(chain + [e for s in (subs or []) for e in _chain(s)]),
    }


def restore(envs: Any, state: dict[str, Any]) -> None:
    """Set the attributes :func:`capture` saved back into ``envs`` (built from the same config).

    Raises:
        EnvStateError: the envs' wrapper chain differs from the saved one.
    """
    _restore_chain(envs, state["vector"])
    subs = getattr(_chain(envs)[-1], "envs", None)
    if state["sub_envs"] is not None:
        if subs is None or len(subs) != len(state["sub_envs"]):
            raise EnvStateError("the saved envs were stepped in this process, the envs built now are not")
        for env, layers in zip(subs, state["sub_envs"]):
            _restore_chain(env, layers)


def _native_state(objects: list[Any]) -> bool:
    """Whether any of ``objects`` keeps state where attributes cannot reach: a MuJoCo or Box2D sim, or
    ale-py's emulators."""
    for obj in objects:
        # An env that says so (EnvPool's pools: C++ objects of no telling module).
        if getattr(obj, "native_state", False):
            return True
        for value in vars(obj).values():
            module = type(value).__module__ or ""
            if module.startswith(("mujoco", "Box2D", "ale_py")):
                return True
    return False


def encode_plain(value: Any) -> Any:
    """``value`` as tensors and plain containers (numbers, strings, numpy arrays, scalars and generators, and
    tuples, lists and deques of them), tagged by kind; None when it is not plain data."""
    return _encode(value)


def decode_plain(encoded: dict[str, Any], current: Any) -> Any:
    """The value :func:`encode_plain` encoded; a generator's state is set into ``current`` in place."""
    return _decode(encoded, current)
