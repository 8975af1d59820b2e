"""The docs' lists of algorithms, from each config model's ``CAPABILITIES``: the README's table of
algorithms (with their count and presets), the masks guide's table, the config guide's paragraph on
spaces, the memory guide's sentence, and the check that finds a list of
algorithms written in prose which disagrees with the declarations.

The tables are generated blocks of :mod:`rlcli.config.reference`; :func:`stale_lists` is what
``tests/test_docs.py`` runs over the docs, the field descriptions and export's messages.
"""

from __future__ import annotations

import re
from typing import Any

from rlcli.config.algos import ALGO_CONFIGS, OFFLINE, WITH_GSDE, WITH_MASKS, WITH_MEMORY, titled
from rlcli.config.algos.capabilities import Capabilities, Variant, words
from rlcli.config.load import load_layers
from rlcli.config.presets import available_presets, find_preset

_NUMBERS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
_NUMBERS += "seventeen eighteen nineteen twenty"


def _number(n: int) -> str:
    """``n`` in words where it is small ("Fourteen"), else in digits."""
    names = _NUMBERS.split()
    return names[n].capitalize() if n < len(names) else str(n)


def _spaces(names: tuple[str, ...], masked: tuple[str, ...] = ()) -> str:
    """Action spaces as the README writes them: "`Discrete` (masked), 1-D `Box`"."""
    one_d = ("Box", "MultiDiscrete", "MultiBinary")
    return ", ".join(
        f"{'1-D ' if name in one_d else ''}`{name}`{' (masked)' if name in masked else ''}" for name in names
    )


def _either(items: list[str]) -> str:
    """``items`` as alternatives: "a", "a or b", "a, b or c"."""
    return ", ".join(items[:-1]) + f" or {items[-1]}" if len(items) > 1 else "".join(items)


def _learns_from(sources: tuple[str, ...], teams: bool = False) -> str:
    envs = "team envs ([multi-agent](docs/guides/multi-agent.md))" if teams else "envs"
    return " or ".join({"collector": envs, "dataset": "a dataset"}[source] for source in sources)


def _preset_rows() -> dict[tuple[str, str], list[str]]:
    """Each shipped preset's name, by (algorithm, variant title or ""), read without validation."""
    rows: dict[tuple[str, str], list[str]] = {}
    for preset in available_presets():
        data, _ = load_layers(find_preset(preset))
        algo, network = data.get("algo", {}), data.get("network", {})
        model = ALGO_CONFIGS.get(algo.get("name"))
        if model is None:
            continue
        variant = next((v.title for v in model.CAPABILITIES.variants if _sets(algo, model, v)), "")
        recurrent = network.get("memory", "none") != "none"
        rows.setdefault((algo["name"], variant), []).append(f"recurrent: `{preset}`" if recurrent else f"`{preset}`")
    return rows


def _sets(algo: dict[str, Any], model: Any, variant: Variant) -> bool:
    """Whether the ``[algo]`` table ``algo`` makes its config ``variant``: it sets the field off its default."""
    return variant.field in algo and algo[variant.field] != model.model_fields[variant.field].default


def _presets(names: list[str]) -> str:
    # Recurrent presets last, named once as such: "`a`, `b`, recurrent: `c`, `d`".
    plain = [n for n in names if not n.startswith("recurrent: ")]
    recurrent = [n.removeprefix("recurrent: ") for n in names if n.startswith("recurrent: ")]
    return ", ".join(plain + ([f"recurrent: {', '.join(recurrent)}"] if recurrent else []))


def readme_markdown() -> str:
    """The README's table of algorithms: one row per ``[algo] name`` and one per variant that has presets,
    with the count, the observations they share and the notes on masks and memory."""
    presets = _preset_rows()
    caps: dict[str, Capabilities] = {name: model.CAPABILITIES for name, model in ALGO_CONFIGS.items()}
    variants = [(name, v) for name, c in caps.items() for v in c.variants if (name, v.title) in presets]
    observations = {c.observations for c in caps.values()}
    uniform = len(observations) == 1
    head = "| algorithm | `[algo] name` |" + ("" if uniform else " observations |")
    rows = [
        head + " actions | learns from | presets | paper |",
        "|---|---|" + ("" if uniform else "---|") + "---|---|---|---|",
    ]

    def row(title: str, name: str, c: Capabilities, sources: tuple[str, ...], paper: str, key: str) -> str:
        masked = c.masks.actions if c.masks else ()
        cells = [title, f"`{name}`"]
        cells += [] if uniform else [", ".join(f"`{o}`" for o in c.observations)]
        cells += [
            _spaces(c.actions, masked),
            _learns_from(sources, c.teams),
            _presets(presets.get((name, key), [])),
            paper,
        ]
        return "| " + " | ".join(cells) + " |"

    for name, c in caps.items():
        title = f"{c.title} ({c.fields_note})" if c.fields_note else c.title
        rows.append(row(title, name, c, c.sources, c.paper, ""))
        for owner, v in variants:
            if owner == name:
                rows.append(row(v.title, name, c, v.sources or c.sources, v.paper, v.title))
    count = f"{_number(len(caps))} algorithms ship, each an `[algo] name`"
    count += f", and {_number(len(variants)).lower()} variants that are fields of theirs" if variants else ""
    notes = []
    if uniform:
        notes.append(
            f"Every algorithm takes {words([f'`{o}`' for o in next(iter(observations))])} observations: a vector "
            "or image `Box`, `Discrete` (one-hot) or a `Dict` of those "
            "([spaces and encoders](docs/config.md#observations-and-encoders))."
        )
    notes.append(
        '"(masked)": the algorithm takes the env\'s invalid-action masks '
        f"([action masks](docs/guides/action-masks.md)). {titled(WITH_MEMORY)} also take an LSTM or GRU core "
        "([recurrent policies](docs/guides/memory.md))."
    )
    return f"{count}:\n\n" + "\n".join(rows) + "\n\n" + " ".join(notes) + "\n"


def masks_markdown() -> str:
    """The masks guide's table: who applies masks, for which action spaces, and where."""
    groups: dict[tuple[tuple[str, ...], str], list[str]] = {}
    for name, model in ALGO_CONFIGS.items():
        # The algorithms of WITH_MASKS, in its order: those that declare masks.
        if (masks := model.CAPABILITIES.masks) is not None:
            groups.setdefault((masks.actions, masks.where), []).append(name)
    rows = ["| algorithm | actions | where |", "|---|---|---|"]
    rows += [f"| {titled(names)} | {_spaces(actions)} | {where} |" for (actions, where), names in groups.items()]
    others = [name for name in ALGO_CONFIGS if name not in WITH_MASKS]
    return "\n".join(rows) + f"\n\n{titled(others)} take no masks.\n" if others else "\n".join(rows) + "\n"


def spaces_markdown() -> str:
    """The config guide's paragraph on which algorithm takes which actions, masks and gSDE."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, model in ALGO_CONFIGS.items():
        groups.setdefault(model.CAPABILITIES.actions, []).append(name)
    one_d = ("Box", "MultiDiscrete", "MultiBinary")
    takes = [
        f"{titled(names)} {'take' if len(names) > 1 else 'takes'} "
        + _either(
            [f"{'1-D ' if a in one_d else ''}`{a}`{' (from 0)' if a == 'MultiDiscrete' else ''}" for a in actions]
        )
        + " actions"
        for actions, names in groups.items()
    ]
    masks = tuple(n for n in WITH_MASKS if "collector" in ALGO_CONFIGS[n].CAPABILITIES.sources)
    return (
        "; ".join(takes)
        + " ([the table of algorithms](../README.md#algorithms)). "
        + f"{titled(masks)} also take the env's invalid-action masks "
        + "([action masks](guides/action-masks.md), `[env] action_mask`). "
        + f"{titled(WITH_GSDE)} take gSDE, state-dependent exploration for `Box` actions.\n"
    )


def memory_markdown() -> str:
    """The memory guide's sentence on which algorithms take a memory core."""
    verb = "take" if len(WITH_MEMORY) > 1 else "takes"
    return (
        f"{titled(WITH_MEMORY)} {verb} one; the other algorithms refuse `[network] memory` with a message "
        "that lists those that take one.\n"
    )


def expected_lists() -> dict[str, tuple[str, ...]]:
    """What a prose list of algorithms next to a keyword must hold, by the keyword's pattern."""
    return {
        r"\bmask": tuple(n for n in WITH_MASKS if "collector" in ALGO_CONFIGS[n].CAPABILITIES.sources),
        r"\b(memory|LSTM|GRU|recurrent)\b": WITH_MEMORY,
        r"MultiDiscrete": tuple(n for n, m in ALGO_CONFIGS.items() if "MultiDiscrete" in m.CAPABILITIES.actions),
        r"\bgSDE\b|use_sde": WITH_GSDE,
        r"\bdataset\b|\boffline\b": OFFLINE,
        r"only 1-D `?Box": tuple(n for n, m in ALGO_CONFIGS.items() if m.CAPABILITIES.actions == ("Box",)),
        r"only `?Discrete": tuple(n for n, m in ALGO_CONFIGS.items() if m.CAPABILITIES.actions == ("Discrete",)),
    }


def _list_pattern() -> re.Pattern[str]:
    titles = sorted((m.CAPABILITIES.title for m in ALGO_CONFIGS.values()), key=len, reverse=True)
    one = "(?<![\\w+-])(?:" + "|".join(re.escape(t) for t in titles) + ")(?![\\w+-])"
    # A prose list ends with "and": "PPO, A2C and TRPO" (a bare "(PPO, A2C)" names examples, not a set).
    return re.compile(f"{one}(?:, {one})*,? and {one}")


def stale_lists(text: str) -> list[str]:
    """The prose lists of two or more algorithms (by title: "PPO, A2C and REINFORCE") in ``text`` that
    disagree with the declarations: each list is read with the clause that follows it (up to the next
    list or the sentence's end); where that clause names a capability (masks, memory, MultiDiscrete
    actions, gSDE, a dataset, only Box or only Discrete actions) and does not deny it ("no", "not", "without"), the list
    must hold exactly the algorithms declaring it. Returns one line per disagreement, with the missing
    and the extra titles."""
    by_title = {m.CAPABILITIES.title: name for name, m in ALGO_CONFIGS.items()}
    expected = expected_lists()
    found = []
    # Lists and clauses run over line breaks, as Markdown paragraphs do.
    text = re.sub(r"[ \t]*\n[ \t]*(?!\n)", " ", text)
    matches = list(_list_pattern().finditer(text))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        clause = re.split(r"(?<=[.;|])\s|\n", text[match.end() : end], maxsplit=1)[0]
        if re.search(r"\b(no|not|without|unmasked)\b", clause):
            continue
        listed = {by_title[t] for t in re.split(r", and |, | and ", match.group(0))}
        for pattern, names in expected.items():
            if re.search(pattern, clause) and listed != set(names):
                missing, extra = set(names) - listed, listed - set(names)
                found.append(
                    f"{match.group(0)!r} ({clause.strip()[:60]!r}): missing {titled(sorted(missing)) or 'none'}, "
                    f"extra {titled(sorted(extra)) or 'none'}"
                )
    return found
