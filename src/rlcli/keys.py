"""TensorDict key names shared by collectors, buffers, advantage estimators and losses.

Every collected batch is time-major with batch shape ``[T, N]``; replay samples
and minibatches are ``[B]``.
"""

OBSERVATION = "observation"
"""[T, N, *obs_shape] in the space's own dtype (a TensorDict for a Dict space), the raw observation acted on."""
NEXT_OBSERVATION = "next_observation"
"""[T, N, *obs_shape] as ``observation``, the raw observation after the step: the true final
observation when the episode ended there, in both gymnasium autoreset modes."""
ACTION = "action"
"""[T, N, *act_shape], int64 for Discrete, float32 (unclipped sample) for Box."""
REWARD = "reward"
"""[T, N] float32, the raw reward of the step (scaled only where it is used)."""
TERMINATED = "terminated"
"""[T, N] bool, the task ended: no bootstrap."""
TRUNCATED = "truncated"
"""[T, N] bool, the clock ended the episode: bootstrap from ``next_observation``."""
VALID = "valid"
"""[T, N] bool, False for the autoreset steps of NEXT_STEP vector envs,
which carry no transition and are never learned from."""
LOG_PROB = "log_prob"
"""[T, N] float32, log-probability of ``action`` under the acting policy."""
VALUE = "value"
"""[T, N] float32, critic estimate of the observation."""
INPUT = "input"
"""[T, N, *obs_shape], the observation as the networks saw it when acting: normalized (float32) with
the statistics frozen for the rollout, or ``observation`` itself (its space's dtype; a TensorDict for a
Dict space) when normalization is off."""
NEXT_INPUT = "next_input"
"""[B, *obs_shape] float32, ``next_observation`` normalized with the current statistics."""
NEXT_VALUE = "next_value"
"""[T, N] float32, critic estimate of ``next_observation``."""
ADVANTAGE = "advantage"
"""[T, N] float32, written by the advantage estimator."""
VALUE_TARGET = "value_target"
"""[T, N] float32, written by the advantage estimator."""
DISCOUNT = "discount"
"""[B] float32, the discount applied to the bootstrap: gamma ** (steps in an n-step return)."""
INDEX = "index"
"""[B] int64, where a replay sample came from (for priority updates)."""
WEIGHT = "weight"
"""[B] float32, the importance weight of a prioritized replay sample."""
ACTION_MASK = "action_mask"
"""[T, N, *mask] bool, the actions the env allowed at ``observation`` (True: allowed): [A] for Discrete(A),
the flat concatenation [sum(nvec)] for MultiDiscrete. Present only in runs with action masks."""
NEXT_ACTION_MASK = "next_action_mask"
"""[T, N, *mask] bool, as ``action_mask`` for ``next_observation`` (the final observation's at episode ends)."""
MEMORY = "memory"
"""[T, N, *state] float32, the policy's memory before acting on ``observation`` (before the reset that
``first`` asks for): a recurrent update re-runs its core from it. Present only for policies with memory."""
FIRST = "first"
"""[T, N] bool, ``observation`` starts an episode (or follows a lost life): memory is zeroed before it
is read. Present only for policies with memory."""
