"""``check_build``: every component of a config built and closed, summed up in one line (``rlcli validate --build``)."""

from __future__ import annotations

from rlcli.config.recipes import how_to_get
from rlcli.config.schema import RunConfig
from rlcli.datasets import datasets_root
from rlcli.envs import describe_space
from rlcli.models.encoders import describe, is_image, named_encoders
from rlcli.models.memory import MemoryCore
from rlcli.run.build import build_run
from rlcli.run.parts import Run


def check_build(cfg: RunConfig, *, source: str | None = None) -> str:
    """Build every component of ``cfg`` without training and close it; returns a one-line summary."""
    run = build_run(cfg, source=source, stand_in_data=True)
    try:
        agent = run.agent
        params = sum(p.numel() for p in agent.parameters())
        space = run.source.observation_space
        encoders = ", ".join(f"{name} {describe(module)}" for name, module in named_encoders(agent))
        assert run.algo.agent.memory is None or isinstance(run.algo.agent.memory, MemoryCore), "a built memory"
        normalize = (
            "on"
            if cfg.env.normalize_observation
            else ("off (image: frames are scaled by 1/255)" if is_image(space) else "off")
        )
        return (
            f"{cfg.algo.name} on {cfg.env.id}: observation {describe_space(space)}, action "
            f"{describe_space(run.source.action_space)}, {params:,} parameters, {run.device}; "
            f"encoders: {encoders}; observation normalization {normalize}; {_masks_note(run)}"
            + ("" if run.algo.agent.memory is None else f"; memory: {run.algo.agent.memory.describe()}")
            + f"; {run.threads.describe()}; precision {cfg.run.precision}"
            + _team_note(run)
            + _stand_in_note(run)
        )
    finally:
        run.close()


def _masks_note(run: Run) -> str:
    """Where the run's action masks come from, as ``[env] action_mask`` was resolved."""
    where = getattr(run.source, "action_mask", None)
    if where == "observation":
        return f'action masks from the observation\'s "action_mask" key ({run.cfg.env.action_mask})'
    if where == "info":
        return f'action masks from info["action_mask"] ({run.cfg.env.action_mask})'
    return f"no action masks ({run.cfg.env.action_mask})"


def _team_note(run: Run) -> str:
    """A team run's groups (agents, spaces) and whether its env has a global state."""
    layout = getattr(run.source, "layout", None)
    return "" if layout is None else f"; {layout.describe()}"


def _stand_in_note(run: Run) -> str:
    dataset = getattr(run.source, "dataset", None)
    if dataset is None or not dataset.stand_in:
        return ""
    how = how_to_get(dataset.name)
    return (
        f"; dataset {dataset.name!r} is not on this machine (not a path, nor an id under {datasets_root()}): "
        f"built on a random stand-in with the env's spaces; training needs the dataset ({how})"
    )
