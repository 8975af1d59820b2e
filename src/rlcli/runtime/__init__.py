"""The process a run computes in: its cores and torch threads, devices, the ranks of a data-parallel
run (``torch.distributed``) and their launch, stop signals, and the child ``rlcli train`` processes of
``--seeds`` and ``rlcli tune``.
"""
