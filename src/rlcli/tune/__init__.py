"""``rlcli tune``: hyperparameter search on Optuna. :mod:`space` reads and checks the search space,
:mod:`study` wires Optuna (storage, sampler, pruner, study), :mod:`trials` runs the trials as
``rlcli train`` processes, and :mod:`reporter` is the hook inside each of them.

Only :mod:`study` and :mod:`trials` import optuna (the ``tune`` extra); the reporter needs none.
"""
