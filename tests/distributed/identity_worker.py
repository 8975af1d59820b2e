"""One rank of the cross-rank identity check, started by torchrun: trains a small run through the
Python API and records a digest of every network and statistic after each gradient step.

Usage: torchrun --standalone --nproc-per-node 2 identity_worker.py OUT_DIR ALGO PARALLEL
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import torch

from rlcli.config.load import validate_data
from rlcli.learning.optim import GradientStep
from rlcli.run import build_run
from rlcli.trainer.loop import train

CONFIGS = {
    "ppo": {
        "env": {"id": "CartPole-v1", "num_envs": 4, "vectorization": "vector_entry_point"},
        "algo": {"name": "ppo", "minibatch_size": 32, "epochs": 2},
        "collector": {"frames_per_batch": 64, "total_frames": 512},
    },
    # A recurrent policy: each rank carries its own envs' memory; the averaged BPTT gradients agree.
    "ppo_lstm": {
        "env": {"id": "CartPoleNoVel-v1", "num_envs": 4},
        "network": {"hidden_sizes": [16], "memory": "lstm", "memory_size": 8},
        "algo": {"name": "ppo", "minibatch_size": 32, "epochs": 2},
        "collector": {"frames_per_batch": 64, "total_frames": 512},
    },
    "dqn": {
        "env": {"id": "CartPole-v1", "num_envs": 4, "vectorization": "vector_entry_point"},
        "algo": {"name": "dqn", "learning_starts": 64, "batch_size": 16, "target_update_interval": 4},
        "collector": {"frames_per_batch": 64, "total_frames": 512},
    },
    # A team: MAPPO on VMAS balance, its group's gradients averaged over the ranks' envs.
    "mappo": {
        "env": {"id": "vmas/balance", "num_envs": 4, "kwargs": {"n_agents": 2}},
        "network": {"hidden_sizes": [16]},
        "algo": {"name": "mappo", "minibatch_size": 32, "epochs": 2},
        "collector": {"frames_per_batch": 64, "total_frames": 512},
    },
    "sac": {
        "env": {"id": "Pendulum-v1", "num_envs": 2, "normalize_observation": True},
        "algo": {"name": "sac", "learning_starts": 32, "batch_size": 16},
        "collector": {"frames_per_batch": 16, "total_frames": 256},
    },
}


def main(out: str, algo: str, parallel: str) -> None:
    cfg = validate_data(
        {
            **CONFIGS[algo],
            "run": {"device": "cpu", "output_dir": out, "parallel": parallel},
            "timing": {"enabled": False},
            "checkpoint": {"every_frames": 0},
        }
    )
    run = build_run(cfg)
    digests: list[str] = []
    step = GradientStep.__call__

    def recorded(self, loss, timer, **options):
        step(self, loss, timer, **options)
        digest = hashlib.sha256()
        for value in run.algo.agent.state_dict().values():
            digest.update(value.detach().contiguous().numpy().tobytes())
        digests.append(digest.hexdigest())

    GradientStep.__call__ = recorded
    state = train(run)
    rank = os.environ["RANK"]
    with open(os.path.join(out, f"rank-{rank}.json"), "w", encoding="utf-8") as handle:
        json.dump(
            {
                "digests": digests,
                "status": state.status,
                "frames": state.frames,
                "iterations": state.iteration,
                "run_dir": str(state.run_dir),
            },
            handle,
        )


if __name__ == "__main__":
    torch.set_num_threads(1)
    main(*sys.argv[1:4])
