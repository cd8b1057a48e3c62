"""Codecs of registry tools, built the first time a value goes through them.

A planning activity may advertise thousands of registry tools and call two of them. Their
schemas are checked when the catalog is built (an invalid schema is refused there), but a
validator costs memory and time per tool, so each tool's codecs hold only the schema's JSON
text until a payload or result is decoded, encoded or checked against it.
"""

from __future__ import annotations

import json
from typing import Any

from agentgen.runtime.contracts.codecs import SchemaCodec

__all__ = ["LazySchemaCodec"]


class LazySchemaCodec:
    """A :class:`~agentgen.runtime.contracts.codecs.SchemaCodec` made on first use.

    ``schema_json`` must be a schema that already passed the compile-time check; ``what``
    (``"<tool> <role>"``) is joined only when the codec is made, so that idle codecs keep no
    string of their own.
    """

    __slots__ = ("_codec", "_role", "_schema_json", "_tool")

    def __init__(self, schema_json: str, tool: str, role: str) -> None:
        self._schema_json = schema_json
        self._tool = tool
        self._role = role
        self._codec: SchemaCodec | None = None

    @property
    def what(self) -> str:
        return f"{self._tool} {self._role}"

    @property
    def built(self) -> bool:
        """Whether the validator exists yet (for tests and diagnostics)."""
        return self._codec is not None

    def _built(self) -> SchemaCodec:
        codec = self._codec
        if codec is None:
            # Two threads may both get here; either codec is equivalent, one is kept.
            codec = self._codec = SchemaCodec(json.loads(self._schema_json), self.what)
        return codec

    @property
    def schema(self) -> dict[str, Any]:
        return self._built().schema

    def decode(self, data: str | bytes | Any) -> Any:
        return self._built().decode(data)

    def decode_arguments(self, data: str | bytes | Any) -> Any:
        return self._built().decode_arguments(data)

    def check(self, value: Any) -> None:
        self._built().check(value)

    def encode(self, value: Any) -> str:
        return self._built().encode(value)
