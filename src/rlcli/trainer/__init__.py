"""The training loop, its state and hooks, what it writes to the run folder (checkpoints, provenance,
the console report) and the resume of a run from its folder.

:mod:`~rlcli.trainer.loop` holds :func:`~rlcli.trainer.loop.train` and the loop itself,
:mod:`~rlcli.trainer.state` the run's state, hooks and columns, :mod:`~rlcli.trainer.saving` what the
loop writes to the run folder (:mod:`~rlcli.trainer.run_folder` with its lock, the checkpoint file
format in :mod:`~rlcli.trainer.checkpoint`, their rotation in :mod:`~rlcli.trainer.checkpoint_folder`,
the generators' state in :mod:`~rlcli.trainer.rng`, :mod:`~rlcli.trainer.provenance`), :mod:`~rlcli.trainer.report` its console output, and
:mod:`~rlcli.trainer.resume` the continuation of a run from its folder.

This package's ``__init__`` imports nothing: :mod:`rlcli.run` reads the run folder from here, and the
loop reads :class:`~rlcli.run.Run`, so re-exporting the loop here would close a cycle.
"""
