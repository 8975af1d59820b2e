"""The README and docs/: every command, config key and bench suite documented, the generated blocks
current, every preset in the README's table of algorithms, every relative link resolving."""

from __future__ import annotations

import importlib
import re
import runpy
import sys
import warnings
from pathlib import Path

import pytest

from rlcli.algos import ALGORITHMS
from rlcli.cli.app import app
from rlcli.config.reference import (
    BLOCKS,
    EXAMPLE,
    EXTRAS,
    REFERENCE,
    current,
    example_markdown,
    extras_markdown,
    main,
    markdown,
)
from rlcli.config.schema import RunConfig

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")
REFERENCE_PAGE = (DOCS / "reference.md").read_text(encoding="utf-8")
# What a link test reads: the README, CONTRIBUTING.md and every page of docs/.
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted(DOCS.rglob("*.md"))]
# Every command of the CLI, so that a new one needs its page.
# A command group (rlcli datasets make, list) has one page for its commands.
COMMANDS = [command.name for command in app.registered_commands] + [group.name for group in app.registered_groups]


@pytest.mark.parametrize("section", [s for s in RunConfig.model_fields if s != "algo"])
def test_every_section_and_key_is_documented(section):
    assert f"### `[{section}]`" in REFERENCE_PAGE
    block = REFERENCE_PAGE.split(f"### `[{section}]`", 1)[1].split("\n### ", 1)[0]
    annotation = RunConfig.model_fields[section].annotation
    # An optional section ([data]) is ``Model | None``.
    model = next(arg for arg in getattr(annotation, "__args__", (annotation,)) if arg is not type(None))
    for key in model.model_fields:
        assert f"| `{key}` |" in block, f"[{section}] {key} missing from docs/reference.md"


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_key_is_documented(name):
    heading = f'### `[algo]` with `name = "{name}"`'
    assert heading in REFERENCE_PAGE
    block = REFERENCE_PAGE.split(heading, 1)[1].split("\n### ", 1)[0]
    for key in ALGORITHMS[name].config.model_fields:
        if key != "name":
            assert f"| `{key}` |" in block, f"algo {name}: {key} missing from docs/reference.md"


def test_quickstart_commands_and_ci_agree():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = "pip install torch==2.13.0 -e '.[test,plot,video,export]' && python -m pytest"
    assert test_command in README and test_command in ci
    assert "pip install torch==2.13.0 -e . && rlcli train presets/ppo_cartpole.toml" in README


def test_the_readme_stays_short():
    assert len(README.splitlines()) <= 250


def test_the_cli_has_the_commands_the_docs_expect():
    assert set(COMMANDS) >= {
        "train", "eval", "collect", "datasets", "plot", "tune", "validate", "show-config", "schema", "bench"
    }  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_a_page_linked_from_the_readme(command):
    page = DOCS / "commands" / f"{command}.md"
    assert page.read_text(encoding="utf-8").startswith(f"# `rlcli {command}`\n")
    assert f"(docs/commands/{command}.md)" in README
    assert f"(commands/{command}.md)" in (DOCS / "README.md").read_text(encoding="utf-8")


def test_every_bench_suite_is_documented():
    from rlcli.bench.suites import SUITES

    page = (DOCS / "commands" / "bench.md").read_text(encoding="utf-8")
    for suite in SUITES:
        assert f"| `{suite}` |" in page


def test_every_preset_and_algorithm_is_in_the_readmes_table():
    table = README.split("## Algorithms", 1)[1].split("\n## ", 1)[0]
    for preset in sorted((ROOT / "presets").glob("*.toml")):
        assert f"`{preset.stem}`" in table, f"{preset.name} is missing from the README's table of algorithms"
    for name in ALGORITHMS:
        assert f"| `{name}` |" in table, f"algorithm {name} is missing from the README's table of algorithms"


def test_config_reference_is_generated_from_the_models():
    block = current(REFERENCE_PAGE, REFERENCE)
    assert block is not None, "docs/reference.md lacks the config reference markers"
    assert block == markdown(), "run: python -m rlcli.config.reference --write"


def test_extras_table_is_generated_from_the_presets():
    block = current(README, EXTRAS)
    assert block is not None, "README.md lacks the extras markers"
    assert block == extras_markdown(), "run: python -m rlcli.config.reference --write"
    # The presets' extras come from their env ids and [data] sections, not from a list.
    assert "| `atari` | `dqn_breakout`, `ppo_breakout`, `ppo_lstm_breakout`, `ppo_pong` |" in block
    assert "`iql_pendulum_medium`" in block.split("| `minari` |", 1)[1].split("\n", 1)[0]


def test_the_readme_and_the_config_page_show_ppo_cartpole_as_its_file_reads(tmp_path):
    preset = (ROOT / "presets" / "ppo_cartpole.toml").read_text(encoding="utf-8")
    for page in (README, (DOCS / "config.md").read_text(encoding="utf-8")):
        block = current(page, EXAMPLE)
        assert block == example_markdown() == f"```toml\n{preset.rstrip()}\n```\n"
    # A page whose copy fell behind the file is stale until rewritten.
    stale = tmp_path / "config.md"
    stale.write_text(f"{EXAMPLE.begin}\n\n```toml\nlr = 1e-3\n```\n\n{EXAMPLE.end}\n", encoding="utf-8")
    assert main(["--check", str(stale)]) == 1
    assert main(["--write", str(stale)]) == 0 and current(stale.read_text(encoding="utf-8"), EXAMPLE) == block


def test_reference_command_finds_stale_blocks_and_rewrites_them(tmp_path, monkeypatch):
    stale_reference = tmp_path / "reference.md"
    stale_reference.write_text(REFERENCE_PAGE.replace("| `num_envs` |", "| `n_envs` |"), encoding="utf-8")
    stale_readme = tmp_path / "README.md"
    stale_readme.write_text(
        README.replace("| `atari` | `dqn_breakout`", "| `atari` | `dqn_tetris`, `dqn_breakout`"), encoding="utf-8"
    )
    for stale, original in ((stale_reference, REFERENCE_PAGE), (stale_readme, README)):
        assert main(["--check", str(stale)]) == 1
        assert main(["--write", str(stale)]) == 0
        assert main(["--check", str(stale)]) == 0
        assert stale.read_text(encoding="utf-8") == original
    # `python -m rlcli.config.reference --check`, the command the error message gives, run in this
    # process from the repository's root (its default files): its exit status is the SystemExit code.
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", ["python -m rlcli.config.reference", "--check"])
    with warnings.catch_warnings(), pytest.raises(SystemExit) as done:
        # runpy warns that the module is imported already (above); running it again as __main__ is the point.
        warnings.filterwarnings("ignore", "'rlcli.config.reference' found in sys.modules", RuntimeWarning)
        runpy.run_module("rlcli.config.reference", run_name="__main__", alter_sys=True)
    assert done.value.code == 0


def test_reference_command_refuses_a_file_without_markers(tmp_path, capsys):
    plain = tmp_path / "notes.md"
    plain.write_text("# Notes\n", encoding="utf-8")
    assert main(["--check", str(plain)]) == 2
    message = capsys.readouterr().err
    assert all(block.begin in message for block in BLOCKS)
    assert main(["--write", str(tmp_path / "missing.md")]) == 2


@pytest.mark.parametrize("script", ["time_to_solve", "zoo_table", "offline_table"])
def test_results_page_holds_the_blocks_its_scripts_rewrite(script, monkeypatch):
    # The scripts import each other as modules of benchmarks/, where they run.
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    module = importlib.import_module(script)
    page = (DOCS / "results.md").read_text(encoding="utf-8")
    assert module.BEGIN in page and module.END in page
    assert "--write docs/results.md" in module.BEGIN


def test_the_table_of_contents_lists_every_page():
    contents = (DOCS / "README.md").read_text(encoding="utf-8")
    for page in sorted(DOCS.rglob("*.md")):
        if page.name != "README.md" or page.parent != DOCS:
            assert f"({page.relative_to(DOCS).as_posix()})" in contents, f"docs/README.md does not link {page}"


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped (code spans keep their text),
    spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def prose_lines(text: str) -> list[str]:
    """The lines of a Markdown file outside fenced code blocks."""
    lines, fence = [], None
    for line in text.splitlines():
        marker = re.match(r"\s*(```|~~~)", line)
        if marker and (fence is None or marker.group(1) == fence):
            fence = marker.group(1) if fence is None else None
        elif fence is None:
            lines.append(line)
    return lines


def anchors(page: Path) -> set[str]:
    """Every heading anchor of ``page``, a repeated heading numbered as GitHub numbers it."""
    seen: dict[str, int] = {}
    for line in prose_lines(page.read_text(encoding="utf-8")):
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            slug = github_slug(heading.group(1))
            seen[slug] = seen.get(slug, -1) + 1
            if seen[slug]:
                seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def relative_links(page: Path) -> list[str]:
    """The targets of the inline links and images of ``page`` that are not URLs, code left out."""
    targets = []
    for line in prose_lines(page.read_text(encoding="utf-8")):
        line = re.sub(r"`[^`]*`", "", line)
        for target in re.findall(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", line):
            if not re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
                targets.append(target)
    return targets


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading with that anchor in {linked.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_check_sees_broken_links_and_anchors(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# A `code` title: here\n\n## Twice\n\n## Twice\n\n"
        "[ok](#a-code-title-here) [ok](#twice-1) [bad](#nowhere) [gone](missing.md) `[not](a-link.md)`\n"
        "[web](https://example.com)\n\n```sh\n[not](inside-a-fence.md)\n```\n",
        encoding="utf-8",
    )
    assert relative_links(page) == ["#a-code-title-here", "#twice-1", "#nowhere", "missing.md"]
    assert {"a-code-title-here", "twice", "twice-1"} <= anchors(page) and "nowhere" not in anchors(page)
