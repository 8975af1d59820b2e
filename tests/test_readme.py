"""The README documents every command and every config key."""

from pathlib import Path

import pytest

from rlcli.algos import ALGORITHMS
from rlcli.config.schema import RunConfig

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("section", [s for s in RunConfig.model_fields if s != "algo"])
def test_every_section_and_key_is_documented(section):
    assert f"### `[{section}]`" in README
    block = README.split(f"### `[{section}]`", 1)[1].split("\n### ", 1)[0]
    annotation = RunConfig.model_fields[section].annotation
    # An optional section ([data]) is ``Model | None``.
    model = next(arg for arg in getattr(annotation, "__args__", (annotation,)) if arg is not type(None))
    for key in model.model_fields:
        assert f"| `{key}` |" in block, f"[{section}] {key} missing from README"


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_key_is_documented(name):
    heading = f'### `[algo]` with `name = "{name}"`'
    assert heading in README
    block = README.split(heading, 1)[1].split("\n### ", 1)[0]
    for key in ALGORITHMS[name].CONFIG.model_fields:
        if key != "name":
            assert f"| `{key}` |" in block, f"algo {name}: {key} missing from README"


def test_quickstart_commands_and_ci_agree():
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    test_command = "pip install torch==2.13.0 -e '.[test,plot,video]' && python -m pytest"
    assert test_command in README and test_command in ci
    assert "pip install torch==2.13.0 -e . && rlcli train presets/ppo_cartpole.toml" in README


@pytest.mark.parametrize("command", ["train", "validate", "show-config", "schema", "bench", "eval", "collect", "tune"])
def test_every_command_is_documented(command):
    assert f"### `rlcli {command}" in README


def test_every_bench_suite_is_documented():
    from rlcli.bench.suites import SUITES

    for suite in SUITES:
        assert f"| `{suite}` |" in README


def test_config_reference_is_generated_from_the_models():
    from rlcli.config.reference import current, markdown

    block = current(README)
    assert block is not None, "README lacks the config reference markers"
    assert block == markdown(), "run: python -m rlcli.config.reference --write README.md"


def test_reference_check_command_fails_on_a_stale_readme(tmp_path, monkeypatch):
    import runpy
    import sys
    import warnings

    from rlcli.config.reference import main

    stale = tmp_path / "README.md"
    stale.write_text(README.replace("| `num_envs` |", "| `n_envs` |"), encoding="utf-8")
    assert main(["--check", str(stale)]) == 1
    assert main(["--write", str(stale)]) == 0
    assert main(["--check", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == README
    # `python -m rlcli.config.reference --check README.md`, the command the error message gives, run in
    # this process: its exit status is the SystemExit code.
    monkeypatch.setattr(sys, "argv", ["python -m rlcli.config.reference", "--check", str(stale)])
    with warnings.catch_warnings(), pytest.raises(SystemExit) as done:
        # runpy warns that the module is imported already (above); running it again as __main__ is the point.
        warnings.filterwarnings("ignore", "'rlcli.config.reference' found in sys.modules", RuntimeWarning)
        runpy.run_module("rlcli.config.reference", run_name="__main__", alter_sys=True)
    assert done.value.code == 0
