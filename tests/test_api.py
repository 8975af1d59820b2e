"""The Python API's names, as the README shows them: in this process, and as the first import of a
fresh interpreter (``integration``), where an import cycle between the package and the modules
its names come from would show."""

import subprocess
import sys

import pytest

CODE = (
    "from rlcli import ConfigError, TrainingError, build_run, load_config, train; "
    "import rlcli.trainer.loop, rlcli.training_error; "
    "assert issubclass(ConfigError, Exception) and issubclass(TrainingError, Exception); "
    "print(TrainingError is rlcli.training_error.TrainingError and train is rlcli.trainer.loop.train)"
)


def test_errors_and_entry_points_import_from_the_package():
    import rlcli
    import rlcli.config.errors
    import rlcli.config.load
    import rlcli.run
    import rlcli.trainer.loop
    import rlcli.training_error

    assert issubclass(rlcli.ConfigError, Exception) and issubclass(rlcli.TrainingError, Exception)
    assert rlcli.ConfigError is rlcli.config.errors.ConfigError
    assert rlcli.TrainingError is rlcli.training_error.TrainingError and rlcli.train is rlcli.trainer.loop.train
    assert rlcli.build_run is rlcli.run.build_run and rlcli.load_config is rlcli.config.load.load_config
    assert set(rlcli.__all__) == {"__version__", "load_config", "ConfigError", "TrainingError", "build_run", "train"}


@pytest.mark.integration
def test_errors_and_entry_points_import_from_the_package_in_a_fresh_interpreter():
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
