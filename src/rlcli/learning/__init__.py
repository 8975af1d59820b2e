"""What algorithms import to learn: advantages and value targets (pure functions over time-major
``[T, N]`` batches), quantile regression, target-network updates, exploration, optimizers and schedules,
and the on-policy (:mod:`~rlcli.learning.on_policy`) and off-policy (:mod:`~rlcli.learning.off_policy`)
learners that algorithms wire their own maths into.
"""
