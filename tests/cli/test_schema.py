"""``rlcli schema``, in this process: a JSON Schema that accepts every preset and rejects broken configs."""

from __future__ import annotations

import copy
import json
import sys

import jsonschema
import pytest

from support.cli import invoke
from support.paths import PRESET_FILES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


@pytest.fixture(scope="module")
def schema():
    result = invoke("schema")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def validator(schema):
    cls = jsonschema.validators.validator_for(schema)
    assert cls is jsonschema.Draft202012Validator
    return cls(schema)


def test_output_is_a_valid_json_schema(schema):
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"env", "algo"}
    assert schema["properties"]["extends"]["type"] == "string"


@pytest.mark.parametrize("preset", PRESET_FILES, ids=lambda p: p.stem)
def test_presets_pass(validator, preset):
    data = tomllib.loads(preset.read_text(encoding="utf-8"))
    assert [e.message for e in validator.iter_errors(data)] == []


def _ppo_cartpole() -> dict:
    return tomllib.loads(next(p for p in PRESET_FILES if p.stem == "ppo_cartpole").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("algo", "clip_epsilom", 0.1),  # unknown key
        (None, "optimizer", {"lr": 0.1}),  # unknown section
        ("env", "num_envs", "eight"),  # wrong type
        ("algo", "gamma", 2),  # out of range
        ("algo", "name", "muzero"),  # unknown algorithm
        ("optim", "lr", -1e-3),  # out of range
    ],
)
def test_broken_documents_fail(validator, section, key, value):
    data = _ppo_cartpole()
    assert validator.is_valid(data)
    broken = copy.deepcopy(data)
    (broken if section is None else broken[section])[key] = value
    errors = list(validator.iter_errors(broken))
    assert errors
    # The error sits in the section that holds the mistake.
    assert {tuple(e.absolute_path)[:1] for e in errors} == {(section,) if section else ()}


def test_algo_keys_belong_to_their_algorithm(validator):
    data = tomllib.loads(next(p for p in PRESET_FILES if p.stem == "a2c_cartpole").read_text(encoding="utf-8"))
    data["algo"]["clip_epsilon"] = 0.2
    assert not validator.is_valid(data)


def test_output_option_writes_the_file(cli, tmp_path, schema):
    result = cli("schema", "-o", "schema.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "schema.json" in result.stdout
    assert json.loads((tmp_path / "schema.json").read_text(encoding="utf-8")) == schema


def test_partial_schema_requires_nothing_and_accepts_a_base_file(cli, schema):
    result = cli("schema", "--partial")
    assert result.returncode == 0, result.stderr
    partial = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(partial)
    assert "required" not in json.dumps(partial)
    base = {"network": {"hidden_sizes": [64, 64]}, "optim": {"lr": 1e-3}, "env": {"num_envs": 8}}
    assert list(jsonschema.Draft202012Validator(partial).iter_errors(base)) == []
    # The full schema flags the same base file; unknown keys stay errors in both.
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(base))
    assert list(jsonschema.Draft202012Validator(partial).iter_errors({"optim": {"learning_rate": 1}}))
