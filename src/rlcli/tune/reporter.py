"""The trial's side of ``rlcli tune``: a hook that a trial's ``rlcli train`` process runs after each
iteration. It appends the return every ``report_every`` frames to a reports file that the tuner reads
(the tuner alone talks to the study's storage), and stops the run, status ``pruned`` with a checkpoint,
once the tuner has created the trial's prune file. A trial whose tuner has died (``kill -9``) stops
too, as an interrupted run: nobody is left to read its reports.

Imports nothing beyond the standard library: the trial's process needs no optuna.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from rlcli.config.errors import InputError
from rlcli.files import write_atomic


@dataclass(frozen=True)
class TrialSpec:
    """What the tuner tells a trial's process, written as JSON beside the trial's runs."""

    report_every: int
    """Frames (gradient steps offline) between two reports."""
    reports: str
    """The JSON-lines file the reports are appended to: ``{"frames": F, "value": V}`` each."""
    prune: str
    """The file whose existence asks the run to stop, pruned."""
    tuner_pid: int
    """The tuner's process id: a trial whose parent is another process has lost its tuner."""
    group: str | None = None
    """A team run's group whose return is the objective (``--objective return/<group>``); None: the team's."""

    def write(self, path: Path) -> None:
        write_atomic(path, json.dumps(asdict(self)) + "\n")

    @classmethod
    def read(cls, path: str | Path) -> TrialSpec:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            group = data.get("group")
            return cls(
                int(data["report_every"]),
                str(data["reports"]),
                str(data["prune"]),
                int(data["tuner_pid"]),
                None if group is None else str(group),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"--tune-trial {path}", f"not a trial file written by rlcli tune ({exc})") from None


def trial_value(state, group: str | None = None) -> float:
    """The return a trial is judged by so far: the last evaluation's mean once the run has evaluated,
    else the rolling training return (NaN before the first episode). A run that evaluates only at
    the end (RL-Zoo's setting for short searches) is thus pruned on its training return. With ``group``,
    that team group's return (``eval/return_mean/<group>``, ``rollout/episode_return_mean/<group>``)."""
    suffix = "" if group is None else f"/{group}"
    if f"eval/return_mean{suffix}" in state.last_eval:
        return float(state.last_eval[f"eval/return_mean{suffix}"])
    if group is None:
        return float(state.last_return)
    return float(state.run.source.row_terms().get(f"rollout/episode_return_mean/{group}", math.nan))


class TrialReporter:
    """The ``on_iteration_end`` hook of a trial (see the module docstring)."""

    def __init__(self, spec: TrialSpec):
        self.spec = spec
        self.reported = 0
        self.prune = Path(spec.prune)

    def __call__(self, state) -> None:
        finishing = state.status != "running" or state.iteration >= state.run.iterations
        if state.frames // self.spec.report_every > self.reported // self.spec.report_every or finishing:
            value = trial_value(state, self.spec.group)
            if math.isfinite(value):
                with open(self.spec.reports, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps({"frames": state.frames, "value": value}) + "\n")
                self.reported = state.frames
        if self.prune.exists() and state.status == "running":
            state.stop_requested, state.stop_status = True, "pruned"
        elif os.getppid() != self.spec.tuner_pid and state.status == "running":
            state.stop_requested = True
