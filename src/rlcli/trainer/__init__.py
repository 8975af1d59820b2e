"""The training loop and what it shares with hooks and callers.

``loop`` holds :func:`train` and the loop itself, ``state`` the run's state, hooks and columns,
``saving`` what the loop writes to the run folder, and ``resume`` the continuation of a run
from its folder.
"""

from rlcli.trainer.loop import train
from rlcli.trainer.state import (
    BASE_COLUMNS,
    EVAL_COLUMNS,
    EvalHook,
    Hook,
    Hooks,
    TrainingError,
    TrainState,
    WeightsSnapshot,
    columns,
    weights_finite,
)

__all__ = [
    "BASE_COLUMNS",
    "EVAL_COLUMNS",
    "EvalHook",
    "Hook",
    "Hooks",
    "TrainState",
    "TrainingError",
    "WeightsSnapshot",
    "columns",
    "train",
    "weights_finite",
]
