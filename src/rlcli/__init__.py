"""rlcli: train reinforcement-learning agents from a small TOML file.

The Python API mirrors the commands: :func:`load_config` reads a preset,
:func:`build_run` wires its components and :func:`train` runs them.
"""

__version__ = "0.1.0"

from rlcli.config.load import load_config
from rlcli.config.errors import ConfigError

__all__ = ["__version__", "load_config", "ConfigError", "TrainingError", "build_run", "train"]


def __getattr__(name: str):
    # The training stack imports torch and gymnasium; keep `import rlcli` light.
    if name == "build_run":
        from rlcli.run import build_run

        return build_run
    if name == "train":
        from rlcli.trainer import train

        return train
    if name == "TrainingError":
        from rlcli.trainer import TrainingError

        return TrainingError
    raise AttributeError(name)
