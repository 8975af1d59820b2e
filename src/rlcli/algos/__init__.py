"""The algorithm table: each entry maps a config ``name`` to its module.

Adding an algorithm means adding its module (which exposes ``CONFIG``,
``SUPPORTS`` and ``build``) and one entry here; the ``AlgoConfig`` union,
``validate --build`` and the generic tests all read this table.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from rlcli.algos import a2c, ppo

ALGORITHMS = {
    "ppo": ppo,
    "a2c": a2c,
}

AlgoConfig = Annotated[
    Union[tuple(module.CONFIG for module in ALGORITHMS.values())],  # noqa: UP007
    Field(discriminator="name"),
]
