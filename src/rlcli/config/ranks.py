"""The config one rank of a data-parallel run trains (``run.parallel``), and why a config
cannot be shared out over a number of ranks."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # For the annotations only: these functions read the config they are given and need nothing of
    # schema.py (every section's model) at run time.
    from rlcli.config.schema import RunConfig


def rank_problems(cfg: RunConfig, world_size: int) -> list[tuple[str, str]]:
    """Why ``cfg`` cannot run on ``world_size`` data-parallel ranks, as (field, message) pairs:
    with ``run.parallel = "split"``, sizes that do not divide by the ranks."""
    if world_size > 1 and cfg.offline:
        return [("data", "an offline run (with [data]) trains in one process; run it without --nproc or torchrun")]
    if cfg.run.parallel == "replicate" or world_size == 1:
        return []
    problems = []
    if cfg.env.num_envs % world_size:
        problems.append(
            (
                "env.num_envs",
                f"num_envs ({cfg.env.num_envs}) must be a multiple of the world size "
                f"({world_size}): each rank steps its share of the envs",
            )
        )
    return problems + cfg.algo.per_rank(world_size)[1]


def rank_config(cfg: RunConfig, world_size: int) -> RunConfig:
    """The config one of ``world_size`` data-parallel ranks runs (call :func:`rank_problems` first).

    ``replicate``: the whole config, for as many iterations as make ``collector.total_frames``
    with every rank's frames counted. ``split``: its share of the envs, of each batch and of
    the algorithm's sizes, for the same iterations, so that the ranks together train what one
    process would with ``cfg``.
    """
    if world_size == 1:
        return cfg
    if cfg.run.parallel == "replicate":
        per_rank = cfg.collector.frames_per_batch
        iterations = -(-cfg.collector.total_frames // (per_rank * world_size))
        return cfg.model_copy(
            update={"collector": cfg.collector.model_copy(update={"total_frames": iterations * per_rank})}
        )
    per_batch = cfg.collector.frames_per_batch // world_size
    collector = cfg.collector.model_copy(
        update={"frames_per_batch": per_batch, "total_frames": cfg.collector.iterations * per_batch}
    )
    env = cfg.env.model_copy(update={"num_envs": cfg.env.num_envs // world_size})
    algo = cfg.algo.model_copy(update=cfg.algo.per_rank(world_size)[0])
    return cfg.model_copy(update={"env": env, "collector": collector, "algo": algo})
