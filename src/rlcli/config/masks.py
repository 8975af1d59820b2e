"""The check of ``[env] action_mask`` against what the algorithm declares it can take, before any env is
made (the action space's own check waits for ``validate --build``: ``rlcli.algos.uses_masks``)."""

from __future__ import annotations

from rlcli.config.algos import WITH_MASKS, capabilities


def mask_problems(algo, env, data) -> list[tuple[str, str]]:
    """Problems of an ``[env] action_mask`` that names where masks are ("info", "observation") for an
    algorithm that applies none, or that learns from a dataset (``data``, the ``[data]`` section)."""
    if algo is None or env is None or env.action_mask in ("auto", "none"):
        return []
    online = [name for name in WITH_MASKS if "collector" in capabilities(name).sources]
    if algo.name in online and data is None:
        return []
    how = "learns from a dataset" if data is not None else "applies none"
    return [
        (
            "env.action_mask",
            f"{algo.name} cannot use action masks ({how}); the algorithms that can: {', '.join(online)}; "
            'set action_mask = "none" (or "auto")',
        )
    ]
