"""The JSON Schema of a preset file (``rlcli schema``, for editors and CI), generated from the pydantic
models beside the Markdown reference of :mod:`rlcli.config.reference`."""

from __future__ import annotations

from typing import Any


def json_schema(*, partial: bool = False) -> dict[str, Any]:
    """JSON Schema of a preset file, including the loader's ``extends`` key.

    With ``partial``, nothing is required anywhere: the schema of a ``_base.toml`` meant
    for ``extends``, which may leave out ``[env]``, ``[algo]`` or any key.
    """
    from rlcli.config.schema import RunConfig

    schema = RunConfig.model_json_schema()
    if partial:
        _drop_required(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "rlcli run config"
    if partial:
        schema["title"] = "rlcli partial run config (a base for extends)"
    schema["properties"]["extends"] = {
        "type": "string",
        "description": "Path of a parent preset, relative to this file; this file is merged over it.",
    }
    return schema


def _drop_required(node: Any) -> None:
    """Remove every ``required`` list from a JSON Schema, in place."""
    if isinstance(node, dict):
        node.pop("required", None)
        for value in node.values():
            _drop_required(value)
    elif isinstance(node, list):
        for value in node:
            _drop_required(value)
