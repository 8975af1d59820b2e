"""``rlcli tune``: hyperparameter search on Optuna. :mod:`space` reads and checks the search space,
:mod:`study` wires Optuna (storage, sampler, pruner, study), :mod:`search` drives a search from its
inputs to its results, :mod:`pool` runs its trials as ``rlcli train`` processes, and :mod:`reporter`
is the hook inside each of them.

Only :mod:`study` imports optuna (the ``tune`` extra), when a search starts; the reporter needs none.
"""
