import pytest

pytest.importorskip("pytest_benchmark", reason="pip install -e '.[bench]'")
