import time

import torch

from rlcli.timing import Timer


def test_phases_accumulate_per_iteration_and_in_totals():
    timer = Timer(torch.device("cpu"))
    for _ in range(2):
        with timer.phase("collect"):
            time.sleep(0.002)
        with timer.phase("collect"):
            time.sleep(0.002)
        with timer.phase("update"):
            pass
        done = timer.end_iteration()
        assert done["collect"] >= 0.004 and set(done) == {"collect", "update"}
    assert timer.iterations == 2
    assert timer.totals["collect"] >= 0.008
    assert timer.mean("collect") == timer.totals["collect"] / 2
    assert timer.current == {}


def test_a_phase_that_raises_is_still_timed():
    timer = Timer(torch.device("cpu"))
    try:
        with timer.phase("update"):
            raise ValueError
    except ValueError:
        pass
    assert "update" in timer.current
