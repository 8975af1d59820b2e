import torch

from rlcli.trainer import checkpoint
from rlcli.trainer.rng import rng_state, set_rng_state


def test_rng_state_round_trips_through_a_weights_only_file(tmp_path):
    import random

    import numpy as np

    state = rng_state()
    expected = (torch.rand(3), np.random.rand(3), random.random())
    checkpoint.save(tmp_path / "rng.pt", {"rng": state})
    set_rng_state(checkpoint.load(tmp_path / "rng.pt")["rng"])
    again = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(expected[0], again[0]) and np.array_equal(expected[1], again[1]) and expected[2] == again[2]
