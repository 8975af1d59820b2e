"""RL-Baselines3-Zoo's own entry point, run from a peer script: ``rl_zoo3.train`` with a command line, the
yml entry it read kept, and the model it built handed to the caller in place of the Zoo's ``learn``.

The peer scripts that compare rlcli with a task the Zoo has a row for go through here (sb3_zoo.py,
sb3_contrib_recurrent.py, sb3_ppo_atari.py), so that nothing of the Zoo's settings is copied by hand: the
Zoo reads its installed hyperparams/<algo>.yml, builds the envs (wrappers, ``VecNormalize``, frame
stacking), resolves ``policy_kwargs`` and the schedules and builds the model, as ``python -m
rl_zoo3.train`` does for its users. Two methods of ``ExperimentManager`` are wrapped for one run and
restored after it: ``read_hyperparameters`` (to keep the entry as read) and ``learn`` (which calls the
caller's function with the manager, the model and the Zoo's own ``learn``). Everything else, the Zoo's
saving of the model included, runs as shipped, into a temporary log folder.

Imported by the scripts beside it, which Python puts on the path when it runs them; runs in the RL-Zoo
peer venv (requirements-rlzoo.txt).
"""

from __future__ import annotations

import copy
import dataclasses
import platform
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata


def jsonable(value):
    """``value`` with classes and schedules named, so that a JSON file says what ran (a dataclass, such as a
    BenchMARL config, field by field)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def versions(*dists: str) -> dict[str, str]:
    """The Python version and each installed distribution's."""
    return {"python": platform.python_version(), **{d: metadata.version(d) for d in dists}}


def zoo_argv(algo: str, env_id: str, seed: int, *, timesteps: int | None, threads: int | None) -> list[str]:
    """``rl_zoo3.train``'s arguments: no evaluation callback, the CPU, quiet; ``-n`` only when given
    (else the yml's n_timesteps), ``--num-threads`` only when given (else torch's default)."""
    argv = ["--algo", algo, "--env", env_id, "--seed", str(seed), "--eval-freq", "-1", "--device", "cpu"]
    argv += ["--verbose", "0"]
    argv += ["-n", str(timesteps)] if timesteps is not None else []
    return argv + (["--num-threads", str(threads)] if threads is not None else [])


def settings(manager, entry: dict) -> dict:
    """What one run of the Zoo ran with: its yml entry as read and what the Zoo made of it."""
    return {
        "zoo_config": manager.config,
        "yml_entry": jsonable(entry),
        "n_envs": manager.n_envs,
        "n_timesteps_run": manager.n_timesteps,
        "frame_stack": manager.frame_stack,
        "normalization": {"normalize": manager.normalize, "normalize_kwargs": jsonable(manager.normalize_kwargs)},
        "passed_to_model": jsonable(manager._hyperparams),
    }


def run_zoo(argv: list[str], learn: Callable) -> dict:
    """``rl_zoo3.train`` with ``argv``, ``learn(manager, model, zoo_learn, entry)`` run in place of the Zoo's
    ``learn`` (``entry``: the yml entry as read); what ``learn`` returned, with ``entry``, ``settings`` and
    ``zoo_command`` added."""
    from rl_zoo3 import exp_manager
    from rl_zoo3.train import train

    manager_cls = exp_manager.ExperimentManager
    read, zoo_learn = manager_cls.read_hyperparameters, manager_cls.learn
    seen: dict = {}

    def reading(self):
        hyperparams, saved = read(self)
        # The Zoo edits the entry in place as it resolves it; the copy is the entry as the yml has it.
        seen["entry"] = copy.deepcopy(dict(saved))
        return hyperparams, saved

    def learning(self, model):
        seen.update(learn(self, model, zoo_learn, seen["entry"]))
        seen["settings"] = settings(self, seen["entry"])

    manager_cls.read_hyperparameters, manager_cls.learn = reading, learning
    try:
        with tempfile.TemporaryDirectory() as logs:
            sys.argv = ["rl_zoo3.train", *argv, "--log-folder", logs]
            train()
    finally:
        manager_cls.read_hyperparameters, manager_cls.learn = read, zoo_learn
    seen["zoo_command"] = ["python", "-m", "rl_zoo3.train", *argv, "--log-folder", "TMP"]
    return seen
