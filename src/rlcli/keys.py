"""TensorDict key names shared by collectors, advantage estimators and losses.

Every rollout batch is time-major with batch shape ``[T, N]``.
"""

OBSERVATION = "observation"
"""[T, N, *obs_shape] float32, the observation as the policy saw it (normalized when
``env.normalize_observation`` is on)."""
ACTION = "action"
"""[T, N, *act_shape], int64 for Discrete, float32 (unclipped sample) for Box."""
LOG_PROB = "log_prob"
"""[T, N] float32, log-probability of ``action`` under the acting policy."""
VALUE = "value"
"""[T, N] float32, critic estimate of the observation."""
NEXT_VALUE = "next_value"
"""[T, N] float32, critic estimate of the observation after the step
(the final observation when the episode was truncated)."""
REWARD = "reward"
"""[T, N] float32, the (optionally scaled) reward of the step."""
TERMINATED = "terminated"
"""[T, N] bool, the task ended: no bootstrap."""
TRUNCATED = "truncated"
"""[T, N] bool, the clock ended the episode: bootstrap from ``next_value``."""
VALID = "valid"
"""[T, N] bool, False for the autoreset steps of NEXT_STEP vector envs,
which carry no transition and are never learned from."""
ADVANTAGE = "advantage"
"""[T, N] float32, written by the advantage estimator."""
VALUE_TARGET = "value_target"
"""[T, N] float32, written by the advantage estimator."""
