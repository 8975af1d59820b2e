"""The search space's checks against the config models: what a field allows on its own."""

from __future__ import annotations

from pydantic import BaseModel

from rlcli.config.load import load_config
from rlcli.tune.space import field_problem, read_space
from support.paths import PRESET_FILES


def fields(model: BaseModel, prefix: str = ""):
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from fields(value, f"{prefix}{name}.")
        else:
            yield model, name, value, f"{prefix}{name}"


def test_every_shipped_value_is_allowed_in_its_own_field():
    # No false alarm: each preset's own values pass the check a space's bounds and choices get.
    for path in PRESET_FILES:
        cfg = load_config(path)
        for owner, name, value, key in fields(cfg):
            assert field_problem(owner, name, value, key) is None, (path.name, key, value)


def test_a_field_refuses_out_of_range_and_wrong_types_with_the_config_message():
    cfg = load_config("ppo_cartpole")
    assert field_problem(cfg.algo, "gamma", 1.5, "algo.gamma") == "1.5 is out of range; allowed: 0 to 1"
    assert "expected an integer" in field_problem(cfg.algo, "epochs", "ten", "algo.epochs")
    # A value another field's check would refuse is left to the sampled config.
    assert field_problem(cfg.algo, "minibatch_size", 4096, "algo.minibatch_size") is None


def test_nested_and_dotted_keys_name_the_same_field(tmp_path):
    path = tmp_path / "space.toml"
    path.write_text(
        "[space.optim]\nlr = { low = 1e-4, high = 1e-2, log = true }\n"
        '[space]\n"algo.epochs" = { low = 2, high = 8, step = 2 }\n',
        encoding="utf-8",
    )
    space = read_space(path, load_config("ppo_cartpole"))
    by_key = {p.key: p for p in space.params}
    assert by_key["optim.lr"].kind == "float" and by_key["optim.lr"].log
    assert by_key["algo.epochs"].kind == "int" and by_key["algo.epochs"].step == 2
    assert space.report_every is None and space.startup_trials == 5
