"""rlcli: train reinforcement-learning agents from a small TOML file.

The Python API mirrors the commands: :func:`load_config` reads a preset,
:func:`build_run` wires its components and :func:`train` runs them.
``load_config`` raises :class:`ConfigError` for a config that cannot be used;
``train`` raises :class:`TrainingError` when training cannot go on.
"""

__version__ = "0.1.0"

__all__ = ["__version__", "load_config", "ConfigError", "TrainingError", "build_run", "train"]


def __getattr__(name: str):
    # Imported on first use: `import rlcli` (and every CLI start) stays light, and
    # Ctrl-C during start-up lands in the CLI's handler rather than in an import.
    if name == "load_config":
        from rlcli.config.load import load_config

        return load_config
    if name == "ConfigError":
        from rlcli.config.errors import ConfigError

        return ConfigError
    if name == "build_run":
        from rlcli.run import build_run

        return build_run
    if name == "train":
        from rlcli.trainer.loop import train

        return train
    if name == "TrainingError":
        from rlcli.training_error import TrainingError

        return TrainingError
    raise AttributeError(f"module 'rlcli' has no attribute {name!r}")
