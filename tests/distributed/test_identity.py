"""Two gloo ranks started by torchrun keep bit-identical networks and statistics after every
gradient step, for an on-policy and two off-policy algorithms, in both parallel modes; and stop
after the same iteration when only one of them is asked to."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("identity_worker.py")
STOP_WORKER = Path(__file__).with_name("stop_worker.py")


@pytest.mark.parametrize(("algo", "parallel"), [("ppo", "replicate"), ("ppo", "split"), ("dqn", "replicate"),
                                                ("sac", "split")])
def test_every_update_leaves_the_ranks_identical(tmp_path, algo, parallel):
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                             str(WORKER), str(tmp_path), algo, parallel],
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank-{r}.json").read_text(encoding="utf-8")) for r in (0, 1)]
    assert ranks[0]["status"] == ranks[1]["status"] == "completed"
    # Frames count both ranks' envs; the steps themselves must have happened and agree one by one.
    assert ranks[0]["frames"] == ranks[1]["frames"] >= 256
    assert len(ranks[0]["digests"]) == len(ranks[1]["digests"]) > 4
    for step, (a, b) in enumerate(zip(ranks[0]["digests"], ranks[1]["digests"])):
        assert a == b, f"the ranks differ after gradient step {step + 1}"
    # The steps changed the weights: identical because averaged, not because nothing moved.
    assert len(set(ranks[0]["digests"])) > len(ranks[0]["digests"]) // 2
    # Rank 0 alone wrote the run folder.
    run_dir = Path(ranks[0]["run_dir"])
    assert (run_dir / "metrics.csv").is_file() and (run_dir / "final.pt").is_file()
    assert len(list(tmp_path.glob("*/metrics.csv"))) == 1


def test_a_stop_asked_of_one_rank_during_a_save_stops_both_after_the_same_iteration(tmp_path):
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                             str(STOP_WORKER), str(tmp_path)], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank-{r}.json").read_text(encoding="utf-8")) for r in (0, 1)]
    assert ranks[0]["status"] == ranks[1]["status"] == "interrupted", ranks
    # Asked during iteration 4's checkpoint: both ranks finish the next iteration, then stop.
    assert ranks[0]["iteration"] == ranks[1]["iteration"] == 5, ranks
    assert max(rank["seconds"] for rank in ranks) < 25, ranks
