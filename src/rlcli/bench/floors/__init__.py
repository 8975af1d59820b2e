"""Bare-torch floors by family: the library's maths written plainly in torch, as one would by hand,
so that the bench suites can price what the library adds (``*.slowdown_vs_bare_torch``,
``gae_speedup``). One module per family: :mod:`~rlcli.bench.floors.policy_gradient` (GAE, PPO,
TRPO), :mod:`~rlcli.bench.floors.value_based` (QR-DQN), :mod:`~rlcli.bench.floors.actor_critic`
(SAC, TQC, CrossQ) and :mod:`~rlcli.bench.floors.offline` (IQL, CQL)."""
