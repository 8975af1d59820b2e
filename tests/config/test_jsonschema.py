"""``config/jsonschema.py``: the JSON Schema of a preset file (the Markdown reference is checked by
``tests/test_docs.py``)."""

from rlcli.config.jsonschema import json_schema
from rlcli.config.schema import SECTIONS


def test_json_schema_documents_every_field():
    schema = json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(schema["properties"]) == {*SECTIONS, "extends"}
    for name, definition in schema["$defs"].items():
        for field, spec in definition.get("properties", {}).items():
            assert spec.get("description"), f"{name}.{field} has no description"
