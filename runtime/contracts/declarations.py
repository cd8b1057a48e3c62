"""The registry wire form of toolsets: what providers publish and consumers resolve.

A ``ToolSchema`` carries a tool's JSON Schemas and its consumer contract (search terms, field
metadata, required labels, confirmation, pagination, server-only data, kind, title): everything
a consumer needs to advertise, confirm, validate and restore calls to a tool it never compiled.
Models are strict (unknown fields rejected) so a malformed declaration fails where it enters.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from agentgen.runtime.contracts.json_values import surrogate_problem
from agentgen.runtime.contracts.limits import MAX_DESCRIPTION_CHARS, MAX_TEXT_CHARS
from agentgen.runtime.visible import quoted

__all__ = [
    "MAX_NAME_LENGTH",
    "TOOL_ID_PATTERN",
    "AgentTarget",
    "Audience",
    "BoundsContract",
    "ConfirmationContract",
    "ConsumerContract",
    "ContractError",
    "FieldMetadata",
    "PagingContract",
    "PathSegment",
    "SearchTerms",
    "ServerDataContract",
    "ToolKind",
    "ToolSchema",
    "ToolsetDeclaration",
    "TypeContract",
    "shown",
]

#: Tool IDs and toolset names are ASCII: one script by construction, so no confusable or
#: invisible letter can make two names look alike (provider-visible names are ASCII anyway).
#: Matched whole (``fullmatch``): ``$`` alone would accept a trailing newline.
TOOL_ID_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,255}")
MAX_NAME_LENGTH = 256

_LINE_BREAKS = frozenset("\t\n\r")
_WITHOUT_LINE_BREAKS = str.maketrans("", "", "\t\n\r")
#: The zero-width non-joiner and joiner are format characters that writing needs: Persian and
#: the Indic scripts spell words with them (``می‌خواهم``), and emoji sequences join with them
#: (``🧑‍💻``). Every other format character (bidi overrides, zero-width spaces) stays refused.
_JOINERS = frozenset("\u200c\u200d")


def _one_line(value: str) -> str:
    """Titles, tags, labels and kinds are single lines of visible text: control and format
    characters (newlines, escapes, zero-width spaces and bidi marks) could disguise them; the
    joiners writing needs (:data:`_JOINERS`) are kept."""
    if value.isprintable():  # no character of category C* or Z* (but space): none to look for
        return value
    for char in value:
        if char not in _JOINERS and unicodedata.category(char) in ("Cc", "Cf"):
            raise ValueError(f"must not contain control or format character {char!r}")
    return value


def _prose(value: str) -> str:
    """Descriptions may span lines, but carry no other control or format characters than the
    joiners writing needs (:data:`_JOINERS`)."""
    if value.isprintable() or value.translate(_WITHOUT_LINE_BREAKS).isprintable():
        return value  # the usual case, checked in C: see _one_line
    for char in value:
        if (
            char not in _LINE_BREAKS
            and char not in _JOINERS
            and unicodedata.category(char) in ("Cc", "Cf")
        ):
            raise ValueError(f"must not contain control or format character {char!r}")
    return value


def _unicode(value: Any, info: ValidationInfo) -> Any:
    """Every string of a declaration reaches JSON documents, provider requests and generated
    code as UTF-8: a lone surrogate (half of a UTF-16 pair, which a Python string may hold) is
    refused where the declaration is built, naming the field, rather than failing later where
    it is written (pydantic's own check of a constrained string refuses it as "unable to parse
    raw data as a unicode string"; a plain ``str`` it keeps).

    JSON text cannot hold one (pydantic refuses ``"\\ud800"`` as invalid JSON), so only
    values built in Python are looked at. JSON Schemas are left to ``contracts.compile``,
    which refuses theirs naming the tool, the schema and the place in it."""
    return value if info.mode == "json" else _encodable(value)


def _encodable(value: Any) -> Any:
    problem = surrogate_problem(value)
    if problem is not None:
        raise PydanticCustomError("lone_surrogate", problem)
    return value


#: A string of a declaration (see ``_unicode``).
Text = Annotated[str, BeforeValidator(_unicode)]
Line = Annotated[
    str,
    Field(max_length=MAX_TEXT_CHARS),
    BeforeValidator(_unicode),
    AfterValidator(_one_line),
]
Prose = Annotated[
    str,
    Field(max_length=MAX_DESCRIPTION_CHARS),
    BeforeValidator(_unicode),
    AfterValidator(_prose),
]

ToolKind = Literal["service", "agent", "control"]
Audience = Literal["timeline", "internal", "evidence"]


def shown(value: object) -> str:
    """A name for messages: ``repr`` of text, cut short (a 10,000-character name, or one with
    control characters, must not flood or forge the message that refuses it)."""
    return quoted(value if isinstance(value, str) else "?")


class ContractError(ValueError):
    """A declaration or contract is malformed; the message names the tool or toolset."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        """The wire form: optional fields left out when empty, so declarations compare and
        fingerprint the same whichever way they were built."""
        data: dict[str, Any] = self.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        return data


class SearchTerms(_Strict):
    """A tool's search document: its version, and each word's counts per field (the fields of
    that version, in order; :mod:`agentgen.runtime.search.document`)."""

    version: int = Field(ge=1)
    # Strict: a registry's 1.0 or true is not a count.
    terms: dict[str, list[StrictInt]] = Field(default_factory=dict)

    @field_validator("terms")
    @classmethod
    def _words(cls, value: dict[str, list[int]], info: ValidationInfo) -> dict[str, list[int]]:
        # The words, checked here rather than as keys: a key's location in a message would
        # hold the surrogate itself.
        return value if info.mode == "json" else _encodable(value)


class PathSegment(_Strict):
    """One step of a field path: a fixed property name, or any element of a collection."""

    field: Text | None = None
    element: bool = False

    @model_validator(mode="after")
    def _one_kind(self) -> PathSegment:
        if (self.field is None) == (not self.element):
            raise ValueError("a path segment is either a field name or a collection element")
        return self


class FieldMetadata(_Strict):
    path: list[PathSegment] = Field(default_factory=list)
    json_type: (
        Literal["object", "array", "string", "number", "integer", "boolean", "null"] | None
    ) = None
    description: Prose | None = None


class TypeContract(_Strict):
    name: Text | None = None
    fields: list[FieldMetadata] = Field(default_factory=list)


class PagingContract(_Strict):
    cursor_field: Text
    next_cursor_field: Text
    continue_tool: Text | None = None
    source_tool: Text | None = None


class BoundsContract(_Strict):
    paging: PagingContract | None = None


class ConfirmationContract(_Strict):
    title: Line | None = None
    prompt_template: Text
    denied_result_template: Text


class ServerDataContract(_Strict):
    kind: Annotated[Line, Field(min_length=1)]
    audience: Audience = "timeline"
    description: Prose | None = None
    schema_: dict[str, Any] = Field(alias="schema")


class AgentTarget(_Strict):
    """For an agent exposed as a tool: the agent that runs it."""

    executor: Annotated[Text, Field(min_length=1)]


class ConsumerContract(_Strict):
    kind: ToolKind
    title: Line
    search: SearchTerms
    payload: TypeContract
    result: TypeContract | None = None
    required_labels: list[Line] = Field(default_factory=list)
    confirmation: ConfirmationContract | None = None
    bounds: BoundsContract | None = None
    server_data: list[ServerDataContract] = Field(default_factory=list)
    agent: AgentTarget | None = None


class ToolSchema(_Strict):
    name: str
    description: Prose | None = None
    tags: list[Line] = Field(default_factory=list)
    payload_schema: dict[str, Any]
    execution_payload_schema: dict[str, Any]
    result_schema: dict[str, Any]
    consumer_contract: ConsumerContract | None = None

    @field_validator("name")
    @classmethod
    def _tool_id(cls, value: str) -> str:
        if (
            not TOOL_ID_PATTERN.fullmatch(value)
            or "." not in value
            or value.endswith(".")
            or ".." in value
        ):
            raise ValueError(
                f"tool name {shown(value)} must be a tool ID such as 'toolset.tool' (ASCII "
                f"letters, digits, '_', '-' and '.', at most {MAX_NAME_LENGTH} characters)"
            )
        return value


class ToolsetDeclaration(_Strict):
    name: str = Field(min_length=1, max_length=MAX_NAME_LENGTH)
    description: Prose | None = None
    version: Line | None = None
    tags: list[Line] = Field(default_factory=list)
    tools: list[ToolSchema] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _toolset_name(cls, value: str) -> str:
        if not TOOL_ID_PATTERN.fullmatch(value) or value.endswith(".") or ".." in value:
            raise ValueError(
                f"toolset name {shown(value)} must be ASCII letters, digits, '_', '-' and '.' "
                f"(at most {MAX_NAME_LENGTH} characters)"
            )
        return value
