"""Every documented list of algorithms agrees with the config models' ``CAPABILITIES``: the generated
tables (README, masks guide) are current, the prose lists in the docs, the field descriptions and
export's messages name exactly the algorithms that declare what they say, and the checks catch a
planted mismatch."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import BaseModel

from rlcli.config.algorithm_tables import masks_markdown, readme_markdown, stale_lists
from rlcli.config.algos import ALGO_CONFIGS, SAMPLING, WITH_MASKS, WITH_MEMORY, titled
from rlcli.config.reference import ALGORITHMS_TABLE, BLOCKS, MASKS_TABLE, current, main
from rlcli.config.schema import RunConfig
from rlcli.play.export.write import _NO_DRAWS

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def prose(text: str) -> str:
    """``text`` without its generated blocks, which ``--check`` compares whole."""
    for block in BLOCKS:
        if current(text, block) is not None:
            head, rest = text.split(block.begin, 1)
            text = head + rest.split(block.end, 1)[1]
    return text


def descriptions() -> list[str]:
    """Every field description of every section and algorithm, nested tables included."""
    found, models = [], [RunConfig, *ALGO_CONFIGS.values()]
    while models:
        model = models.pop()
        for field in model.model_fields.values():
            found.append(field.description or "")
            for arg in (field.annotation, *getattr(field.annotation, "__args__", ())):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    models.append(arg)
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_prose_list_of_algorithms_differs_from_the_records(page):
    assert stale_lists(prose(page.read_text(encoding="utf-8"))) == []


def test_no_description_or_export_message_differs_from_the_records():
    assert [problem for text in descriptions() for problem in stale_lists(text)] == []
    env, network = RunConfig.model_fields["env"].annotation, RunConfig.model_fields["network"].annotation
    assert f"Discrete and MultiDiscrete actions; {titled(WITH_MASKS)})" in env.model_fields["action_mask"].description
    assert f"for {titled(WITH_MEMORY)}:" in network.model_fields["memory"].description
    assert SAMPLING in _NO_DRAWS and "TRPO" in SAMPLING and "QR-DQN" in SAMPLING


def test_the_generated_tables_are_current(monkeypatch):
    # Every generated block of every page --write rewrites: the README's and guides' lists included.
    monkeypatch.chdir(ROOT)
    assert main(["--check"]) == 0
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    guide = (ROOT / "docs/guides/action-masks.md").read_text(encoding="utf-8")
    assert current(readme, ALGORITHMS_TABLE) == readme_markdown()
    assert current(guide, MASKS_TABLE) == masks_markdown()
    # The count is derived: one per [algo] name, written as a word.
    count = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
    assert readme_markdown().split()[:2] == [count.split()[len(ALGO_CONFIGS) - 1].capitalize(), "algorithms"]
    for spec in ALGO_CONFIGS.values():
        assert f"| `{spec.model_fields['name'].annotation.__args__[0]}` |" in readme_markdown()


def test_a_planted_prose_mismatch_is_reported(tmp_path):
    page = tmp_path / "action-masks.md"
    shutil.copy(ROOT / "docs/guides/action-masks.md", page)
    text = page.read_text(encoding="utf-8")
    told = "PPO, A2C, REINFORCE, TRPO, IPPO and MAPPO take 1-D `MultiDiscrete` actions"
    assert told in " ".join(text.split()) and stale_lists(text) == []
    planted = " ".join(text.split()).replace(
        told, "PPO, A2C, REINFORCE, IPPO and MAPPO take 1-D `MultiDiscrete` actions"
    )
    page.write_text(planted)
    (problem,) = stale_lists(page.read_text(encoding="utf-8"))
    assert "'PPO, A2C, REINFORCE, IPPO and MAPPO'" in problem and "missing TRPO, extra none" in problem
    # A list that says a capability and claims one too many is reported as well, and a denial is not a claim.
    assert "extra SAC" in stale_lists("PPO, A2C, REINFORCE and SAC take an LSTM core.")[0]
    assert stale_lists("SAC and TD3 take no masks.") == []


def test_a_planted_table_mismatch_is_reported(tmp_path, capsys):
    readme, guide = tmp_path / "README.md", tmp_path / "action-masks.md"
    shutil.copy(ROOT / "README.md", readme)
    shutil.copy(ROOT / "docs/guides/action-masks.md", guide)
    assert main(["--check", str(readme), str(guide)]) == 0
    text = guide.read_text(encoding="utf-8")
    guide.write_text(text.replace("| DQN and QR-DQN |", "| DQN |"), encoding="utf-8")
    count = readme_markdown().split()[0]
    readme.write_text(readme.read_text(encoding="utf-8").replace(f"{count} algorithms", "Seventy algorithms"))
    assert main(["--check", str(readme), str(guide)]) == 1
    err = capsys.readouterr().err
    assert f"{readme} (algorithms)" in err and f"{guide} (masks)" in err
