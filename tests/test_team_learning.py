"""Learning bars of the team algorithms (slow): agents that leave and join under per-agent masks learn the test
env's solved score without one forbidden action, and MAPPO's navigation preset beats random play."""

from __future__ import annotations

import json
import statistics

import pytest
import torch

from rlcli.collectors.teams import TeamEpisodes
from rlcli.config.load import load_config
from rlcli.envs.teams import ALIVE, DONE, make_team_envs
from rlcli.run import build_run
from rlcli.trainer.loop import train
from support.teams import leavers, needs, team_config

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("algo", ["ippo", "mappo"])
def test_leaving_and_joining_agents_learn_the_solved_score_with_no_forbidden_action(tmp_path, algo):
    leavers()
    from rlcli_test_envs.teams import Leavers

    Leavers.forbidden = 0
    cfg = team_config(
        algo,
        "RlcliTest/leavers-v0",
        tmp_path=tmp_path,
        num_envs=16,
        frames=384,
        total=12_000,
        network={"hidden_sizes": [64, 64]},
        algo={"minibatch_size": 256, "epochs": 4, "gamma": 0.9},
        optim={"lr": 3e-3},
        eval={"final_episodes": 100},
    )
    state = train(build_run(cfg))
    final = json.loads((state.run_dir / "run.json").read_text())["final_eval"]
    # A perfect team returns 6; uniform play among the legal actions about 2.
    assert final["mean"] >= 5.5, final
    # The env counted every action played, in training and in the evaluation: none was forbidden.
    assert Leavers.forbidden == 0


def random_return(preset: str, episodes: int = 50) -> float:
    """The mean return of uniform random actions on ``preset``'s env, over ``episodes`` episodes."""
    cfg = load_config(preset)
    envs = make_team_envs(cfg.env, episodes, seed=123, device=torch.device("cpu"), state=False)
    stats = TeamEpisodes(envs.layout.names, episodes, episodes, torch.device("cpu"))
    generator = torch.Generator().manual_seed(0)
    start = envs.reset(123)
    try:
        while stats.episode_count < episodes:
            actions = {}
            for spec in envs.layout.groups:
                low, high = torch.as_tensor(spec.action_space.low), torch.as_tensor(spec.action_space.high)
                draw = torch.rand(episodes, spec.size, *spec.action_space.shape, generator=generator)
                actions[spec.name] = low + (high - low) * draw
            after, fresh = envs.step(actions)
            names = envs.layout.names
            stats.step({n: after[n, "reward"] for n in names}, {n: start[n, ALIVE] for n in names}, after[DONE])
            start = fresh.clone()
    finally:
        envs.close()
    return statistics.fmean(list(stats.return_queue)[:episodes])


def test_mappo_navigation_beats_random_play_in_a_short_run(tmp_path):
    needs("vmas")
    baseline = random_return("mappo_vmas_navigation")
    # The preset at lr 3e-4: at BenchMARL's 5e-5 it does not leave random play within a CI-sized budget (the
    # issue allows the raise; the comparison with BenchMARL is benchmarks/peers/'s).
    cfg = load_config(
        "mappo_vmas_navigation",
        [
            "run.seed=0",
            f'run.output_dir="{tmp_path}"',
            "optim.lr=3e-4",
            # 3 passes rather than BenchMARL's 45: a CI-sized update (the comparison runs the preset's).
            "algo.epochs=3",
            "collector.total_frames=60000",
            "eval.final_episodes=50",
        ],
    )
    state = train(build_run(cfg))
    final = json.loads((state.run_dir / "run.json").read_text())["final_eval"]
    assert state.last_return > baseline + 0.5, (state.last_return, baseline)
    assert final["mean"] > baseline, (final, baseline)


def recall_run(tmp_path, memory: str) -> float:
    """The final evaluation's mean return of IPPO on ``RlcliTest/recall-v0`` with ``memory`` (or none)."""
    leavers()
    network: dict = {"hidden_sizes": [64]}
    if memory != "none":
        network |= {"memory": memory, "memory_size": 32}
    cfg = team_config(
        "ippo",
        "RlcliTest/recall-v0",
        tmp_path=tmp_path / memory,
        num_envs=16,
        frames=256,
        total=8192,
        network=network,
        algo={"minibatch_size": 256, "epochs": 4, "entropy_coef": 0.01},
        optim={"lr": 3e-3},
        eval={"final_episodes": 100},
    )
    state = train(build_run(cfg))
    return json.loads((state.run_dir / "run.json").read_text())["final_eval"]["mean"]


def test_each_agent_recalls_its_own_cue_with_a_gru_where_memoryless_play_cannot(tmp_path):
    # Recalling the cue returns 1; without memory the query looks the same whatever the cue: 0.5 at best.
    assert recall_run(tmp_path, "gru") >= 0.95
    assert recall_run(tmp_path, "none") <= 0.7
