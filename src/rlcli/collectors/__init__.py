"""Online data in: the env stepper that writes ``[T, N]`` transitions of vector envs
(:mod:`~rlcli.collectors.stepper`), action masks on their way from the envs to the agent
(:mod:`~rlcli.collectors.mask_recorder`) and the envs' state as plain data for checkpoints
(:mod:`~rlcli.collectors.envstate`).
"""
