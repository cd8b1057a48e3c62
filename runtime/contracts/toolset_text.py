"""Toolset declarations kept as the JSON text a registry answered, parsed when compiled.

A registry client keeps the last answer of every toolset it read, to be told later that it is
unchanged. Kept parsed, a whole registry's answers are dozens of objects per tool that the
garbage collector tracks: every full collection of the consumer's process walks them, and at
10,000 tools those walks cost more than building the catalog itself (each one a long stall of
the event loop). Kept as text, an answer is one ``bytes`` object the collector never looks at;
a planning catalog parses one toolset when it compiles it and keeps only what it compiled.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agentgen.runtime.contracts.declarations import ContractError, ToolsetDeclaration, shown
from agentgen.runtime.contracts.validation_errors import error_line

__all__ = ["ToolsetText"]


class ToolsetText:
    """A toolset declaration as JSON text, with the toolset's own fields already read.

    ``text`` is the declaration's JSON, or a JSON object holding it under the key ``within``
    (a resolve answer holds it under ``toolset``, beside its registration token). ``name``,
    ``version``, ``description`` and ``tags`` are the toolset's own fields as the client read
    them from the same text: the parsed declaration must have exactly these. Each call of
    :meth:`declaration` validates a new declaration from the text, and nothing keeps it.
    """

    __slots__ = ("description", "name", "tags", "text", "version", "within")

    def __init__(
        self,
        text: bytes,
        *,
        name: str,
        version: str | None = None,
        description: str | None = None,
        tags: Sequence[str] = (),
        within: str | None = None,
    ) -> None:
        self.text = text
        self.within = within
        self.name = name
        self.version = version
        self.description = description
        self.tags = tuple(tags)

    def __repr__(self) -> str:
        return f"ToolsetText(name={self.name!r}, version={self.version!r}, {len(self.text)} bytes)"

    def declaration(self) -> ToolsetDeclaration:
        """A freshly parsed declaration (callers may change it freely).

        Raises :class:`ContractError`, naming the tool at fault or else the toolset, when the
        text is not a valid declaration of the toolset its own fields name.
        """
        try:
            if self.within is None:
                parsed = ToolsetDeclaration.model_validate_json(self.text)
            else:
                parsed = _envelope(self.within).model_validate_json(self.text).declaration
        except ValidationError as exc:
            raise ContractError(self._refusal(exc)) from None
        read = (self.name, self.version, self.description, self.tags)
        if (parsed.name, parsed.version, parsed.description, tuple(parsed.tags)) != read:
            raise ContractError(
                f"toolset {shown(self.name)}: its text declares toolset {parsed.name!r} (version "
                f"{parsed.version!r}) with other fields than the registry client read from it"
            )
        return parsed

    def _refusal(self, exc: ValidationError) -> str:
        error = exc.errors()[0]
        found = _tool_at(self.text, list(error["loc"]))
        if found is None:
            return f"toolset {shown(self.name)} declaration: {error_line(error)}"
        tool, rest = found
        within = error_line(error, skip=len(error["loc"]) - len(rest))
        return f"tool {shown(tool)} declaration: {within}"


@functools.lru_cache(maxsize=16)
def _envelope(key: str) -> Any:
    """A model of a JSON object holding a declaration under ``key`` (its other members are
    the client's to check: a resolve answer's token, say)."""
    model: type[BaseModel] = create_model(
        "ToolsetEnvelope",
        __config__=ConfigDict(extra="ignore"),
        declaration=(ToolsetDeclaration, Field(alias=key)),
    )
    return model


def _tool_at(text: bytes, loc: list[int | str]) -> tuple[str, list[int | str]] | None:
    """The name of the tool a validation error's location points into, and the location
    within that tool (only read when a declaration is refused)."""
    try:
        node: Any = json.loads(text)
    except ValueError:
        return None
    for index, part in enumerate(loc):
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            if index > 0 and loc[index - 1] == "tools" and isinstance(node, dict):
                name = node.get("name")
                return (name, loc[index + 1 :]) if isinstance(name, str) else None
        else:
            return None
    return None
