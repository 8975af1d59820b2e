"""The Python API's names, as the README shows them."""

import subprocess
import sys


def test_errors_and_entry_points_import_from_the_package():
    code = ("from rlcli import ConfigError, TrainingError, build_run, load_config, train; "
            "import rlcli.trainer; "
            "assert issubclass(ConfigError, Exception) and issubclass(TrainingError, Exception); "
            "print(TrainingError is rlcli.trainer.TrainingError and train is rlcli.trainer.train)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
