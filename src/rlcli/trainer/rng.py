"""The process-wide generators (torch's CPU and CUDA, numpy's, Python's) as a checkpoint saves them
and a resumed run sets them back, so that a resumed run draws what the unbroken one would have."""

from __future__ import annotations

from typing import Any

import torch


def rng_state() -> dict[str, Any]:
    """The process-wide generators: torch's CPU (and CUDA, once initialised), numpy's and Python's."""
    import random

    import numpy as np

    # legacy=True is numpy's default; numpy's stub gives the default call the dict overload instead.
    state = np.random.get_state(legacy=True)
    # The global RandomState is always MT19937, whose legacy state is this tuple.
    assert isinstance(state, tuple)
    kind, keys, position, has_gauss, gauss = state
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None,
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype("int64")),
            "position": int(position),
            "has_gauss": int(has_gauss),
            "gauss": float(gauss),
        },
        "python": random.getstate(),
    }


def set_rng_state(state: dict[str, Any]) -> None:
    """Set the generators :func:`rng_state` saved (CUDA's only when this process has as many devices)."""
    import random

    import numpy as np

    torch.set_rng_state(state["torch"])
    cuda = state["cuda"]
    if cuda is not None and torch.cuda.is_available() and torch.cuda.device_count() == len(cuda):
        torch.cuda.set_rng_state_all(cuda)
    saved = state["numpy"]
    np.random.set_state(
        (saved["kind"], saved["keys"].numpy().astype("uint32"), saved["position"], saved["has_gauss"], saved["gauss"])
    )
    random.setstate(state["python"])
