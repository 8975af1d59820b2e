"""One rank of the stop-agreement check, started by torchrun: rank 0 alone is asked to stop while it
writes a checkpoint, after the ranks' joint stop decision of that iteration (where a signal can
land); each rank records where and how it ended.

Usage: torchrun --standalone --nproc-per-node 2 stop_worker.py OUT_DIR
"""

from __future__ import annotations

import datetime
import json
import os
import sys

import rlcli.runtime.distributed
import rlcli.trainer.loop
import rlcli.trainer.saving
from rlcli.config.load import validate_data
from rlcli.run import build_run

# A hang shows as a failure (RankLost) within the test's time, not after the real 5 minutes.
rlcli.runtime.distributed.COLLECTIVE_TIMEOUT = datetime.timedelta(seconds=30)


def main() -> None:
    out = sys.argv[1]
    rank = int(os.environ["RANK"])
    cfg = validate_data(
        {
            "env": {"id": "CartPole-v1", "num_envs": 4, "vectorization": "vector_entry_point"},
            "algo": {"name": "ppo", "minibatch_size": 32, "epochs": 1},
            "collector": {"frames_per_batch": 64, "total_frames": 2048},
            "checkpoint": {"every_frames": 256},
            "run": {"device": "cpu", "output_dir": out},
            "timing": {"enabled": False},
        }
    )
    run = build_run(cfg)
    save = rlcli.trainer.saving.save_checkpoint

    def save_then_signal(state) -> None:
        save(state)
        if rank == 0 and state.iteration == 4:
            # What the SIGTERM handler does, on this rank only.
            state.stop_requested, state.stop_signal = True, "SIGTERM"

    rlcli.trainer.saving.save_checkpoint = save_then_signal
    try:
        state = rlcli.trainer.loop.train(run)
        result = {"status": state.status, "iteration": state.iteration}
    except Exception as exc:  # noqa: BLE001 - recorded for the test to show
        result = {"status": "raised", "error": f"{type(exc).__name__}: {exc}"}
    with open(os.path.join(out, f"rank-{rank}.json"), "w", encoding="utf-8") as file:
        json.dump(result, file)


if __name__ == "__main__":
    main()
