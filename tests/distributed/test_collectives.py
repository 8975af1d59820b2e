"""The one-process stand-in of the rank group; the collectives of real ranks are checked against it
in test_identity.py."""

import torch

from rlcli.runtime.distributed import Single


def test_the_single_group_is_the_identity():
    group = Single()
    values = torch.tensor([1.0, float("nan")])
    assert group.mean(values) is values and group.sum(values) is values
    assert group.any(True) and not group.any(False)
    assert torch.equal(group.gather_rows(values[:1]), torch.tensor([[1.0]]))
    assert group.gather_to_main(3) == [3] and group.broadcast_object(5) == 5
    assert group.is_main and group.world_size == 1
