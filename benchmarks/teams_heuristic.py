"""A trained VMAS team beside the scenario's own ``HeuristicPolicy`` on the same seeded episodes (issue 46's bar:
``mappo_vmas_balance`` as shipped scores at least VMAS's heuristic on the same 200 episodes).

Both play the first episode of each of ``--episodes`` VMAS envs of the run's config, made and reset from the
same seed, so that both start from the same states (the script checks the first observations agree); the
trained team acts deterministically (its mean action), the heuristic as VMAS ships it for the scenario
(``vmas.scenarios.<scenario>.HeuristicPolicy``, continuous actions). A return is counted as rlcli counts it:
the sum over groups of each group's return, the sum over the episode of its live agents' mean reward.

    python benchmarks/teams_heuristic.py RUN_DIR [--episodes 200] [--seed 1000000]

Prints one JSON line: each side's mean, median, standard deviation and the episodes played.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
from pathlib import Path

import torch

from rlcli.collectors.teams import TeamEpisodes
from rlcli.config.load import load_config
from rlcli.envs.teams import ALIVE, DONE, VMAS_PREFIX, make_team_envs
from rlcli.learning.teams import TeamAgent
from rlcli.play.playback import restored
from rlcli.trainer.checkpoint_folder import find_checkpoint


def play(cfg, episodes: int, seed: int, act) -> tuple[list[float], torch.Tensor]:
    """The return of the first episode of each of ``episodes`` envs, acting with ``act(observation)`` (team
    observations [N] -> each group's actions), and the first observations the envs gave."""
    device = torch.device("cpu")
    envs = make_team_envs(cfg.env, episodes, seed=seed, device=device, state=False)
    names = envs.layout.names
    stats = TeamEpisodes(names, episodes, episodes, device)
    start = envs.reset(seed).clone()
    first = torch.cat([start[name, "observation"].flatten(1) for name in names], -1)
    returns: list[float | None] = [None] * episodes
    try:
        while any(value is None for value in returns):
            actions = act(start)
            after, fresh = envs.step(actions)
            ended = stats.step({n: after[n, "reward"] for n in names}, {n: start[n, ALIVE] for n in names}, after[DONE])
            for i, value in [] if ended is None else zip(ended.envs, ended.returns):
                if returns[i] is None:
                    returns[i] = value
            start = fresh.clone()
    finally:
        envs.close()
    return [float(value) for value in returns if value is not None], first


def summary(returns: list[float]) -> dict:
    return {
        "mean": statistics.fmean(returns),
        "median": statistics.median(returns),
        "std": statistics.pstdev(returns),
        "episodes": len(returns),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a run folder of a VMAS team preset")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1_000_000)
    args = parser.parse_args()
    folder, weights = find_checkpoint(args.run)
    cfg = load_config(folder / "config.toml")
    if not cfg.env.id.startswith(VMAS_PREFIX):
        raise SystemExit(f"{cfg.env.id}: the heuristic policies are VMAS scenarios'")
    scenario = importlib.import_module(f"vmas.scenarios.{cfg.env.id[len(VMAS_PREFIX) :]}")
    heuristic = scenario.HeuristicPolicy(continuous_action=True)
    team = restored(cfg, weights, torch.device("cpu"), render=False, source=str(folder / "config.toml")).agent
    assert isinstance(team, TeamAgent)

    def heuristic_actions(observation) -> dict:
        out = {}
        for spec in team.inputs.values():
            group = spec.spec
            u_range = float(group.action_space.high[0])
            obs = observation[group.name, "observation"]
            out[group.name] = torch.stack([heuristic.compute_action(obs[:, i], u_range) for i in range(group.size)], 1)
        return out

    generator = torch.Generator().manual_seed(0)
    carry = team.carry(args.episodes, torch.device("cpu"))

    calls = []

    def team_actions(observation) -> dict:
        # Only each env's first episode counts: memory starts afresh at the first step alone.
        carry.episode_starts(observation, torch.full((args.episodes,), not calls))
        calls.append(None)
        chosen = team.actions(observation, deterministic=True, generator=generator, carry=carry)
        return {name: chosen[name, "action"] for name in team.agents}

    ours, first = play(cfg, args.episodes, args.seed, team_actions)
    theirs, their_first = play(cfg, args.episodes, args.seed, heuristic_actions)
    assert torch.equal(first, their_first), "both sides start from the same states"
    print(
        json.dumps(
            {
                "run": str(folder),
                "env": cfg.env.id,
                "env_kwargs": cfg.env.kwargs,
                "seed": args.seed,
                "same_start_states": True,
                "rlcli": summary(ours),
                "heuristic": summary(theirs),
            }
        )
    )


if __name__ == "__main__":
    main()
