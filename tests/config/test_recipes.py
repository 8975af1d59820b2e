"""The table of datasets rlcli makes: ids looked up with close matches, and the hint a missing dataset gives."""

from __future__ import annotations

import pytest

from rlcli.config.errors import InputError
from rlcli.config.recipes import RECIPES, how_to_get, lookup


def test_lookup_keeps_the_table_order_and_each_id_once():
    names = ["pendulum/random-v0", "pendulum/expert-v0", "pendulum/random-v0"]
    assert [r.id for r in lookup(names)] == ["pendulum/expert-v0", "pendulum/random-v0"]


def test_the_recipes_sharing_a_run_share_one_training_record():
    trained = {r.training for r in RECIPES.values() if r.training is not None}
    assert len(trained) == 1 and next(iter(trained)).preset == "sac_pendulum"
    assert RECIPES["pendulum/random-v0"].training is None


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("pendulum/expret-v0", "did you mean 'pendulum/expert-v0'?"),
        ("mujoco/walker2d/medium-v0", "if Minari hosts it, minari download mujoco/walker2d/medium-v0 fetches it"),
    ],
)
def test_an_unknown_id_lists_the_recipes_and_suggests(name, fragment):
    with pytest.raises(InputError) as raised:
        lookup([name])
    message = raised.value.render()
    assert message.startswith(f"{name}: no recipe makes this dataset") and fragment in message
    assert all(recipe in message for recipe in RECIPES)


def test_the_hint_names_rlcli_for_its_own_datasets_and_minari_for_the_rest():
    for name in RECIPES:
        assert f"`rlcli datasets make {name}` writes it" in how_to_get(name)
    assert "trains sac_pendulum first" in how_to_get("pendulum/medium-v0")
    assert "trains" not in how_to_get("pendulum/random-v0")
    assert "`minari download D4RL/door/human-v2`" in how_to_get("D4RL/door/human-v2")
    assert "minari download" not in how_to_get("./my/dataset")
