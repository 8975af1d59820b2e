"""``build_run``: the one place where a config's components meet (:mod:`rlcli.run.build`; a team env's in
:mod:`rlcli.run.teams`), the :class:`Run` it returns (:mod:`rlcli.run.parts`), and ``check_build``, which
``rlcli validate --build`` runs (:mod:`rlcli.run.check`)."""

from rlcli.run.build import build_run
from rlcli.run.check import check_build
from rlcli.run.parts import Run

__all__ = ["Run", "build_run", "check_build"]
