"""How results of an external MCP server become the tool's JSON value (``agentgen.runtime.mcp``).

Text carries no type: ``"2024"`` may be the string a ``-> str`` tool meant, ``"alpha"`` the
only item of a ``-> list[str]`` tool's answer (the SDK's ``MCPServer`` sends an unstructured
list one text block per item). The caller reads text by the tool's declared ``Return``, so a
server that answers as designed passes the runtime's result check. A real ``MCPServer`` runs
in-process behind a real ``mcp.Client``, as in ``test_mcp.py``.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from agentgen.runtime.agents.definition import AgentDefinition
from agentgen.runtime.app import Runtime
from agentgen.runtime.contracts.limits import MAX_MCP_TEXT_DEPTH
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.mcp import (
    MAX_ERROR_CHARS,
    MCPResultError,
    MCPToolError,
    MCPToolsetExecutor,
    SessionCaller,
    tool_value,
)
from agentgen.runtime.messages import ToolResultPart
from tests.runtime.agents import ScriptedPlanner, answer, calls
from tests.runtime.test_mcp import AGENT, CITY, MODES, almanac, almanac_spec, error_of

N = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
STRINGS = {"type": "array", "items": {"type": "string"}}
BIG = "x" * (MAX_ERROR_CHARS + 500)


def build_server() -> MCPServer:
    server = MCPServer("almanac_server")

    @server.tool(structured_output=False)
    def tags(n: int) -> list[str]:
        return ["alpha", "beta", "2024"][:n]

    @server.tool(structured_output=False)
    def counts(n: int) -> list[int]:
        return [7, 8][:n]

    @server.tool(structured_output=False)
    def serialized_tags(n: int) -> str:
        # What most servers do: the whole list serialized into one text block.
        return json.dumps(["alpha", "beta", "2024"][:n])

    @server.tool(structured_output=False)
    def records(n: int) -> str:
        return json.dumps([{"id": 1}, {"id": 2}, {"id": "three"}][:n])

    @server.tool(structured_output=False)
    def year(city: str) -> str:
        return "2024"

    @server.tool(structured_output=False)
    def verdict(city: str) -> str:
        return "true"

    @server.tool(structured_output=False)
    def level(city: str) -> str:
        return "null"

    @server.tool(structured_output=False)
    def depth(city: str) -> int:
        return 42

    @server.tool(structured_output=False)
    def chart(city: str) -> list[Any]:
        return [
            TextContent(type="text", text='{"summary": "rain"}'),
            ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
        ]

    @server.tool(structured_output=False)
    def readme(city: str) -> list[Any]:
        contents = TextResourceContents(uri="file:///readme.md", text="2024 was wet")
        return [EmbeddedResource(type="resource", resource=contents)]

    @server.tool(structured_output=False)
    def archive(city: str) -> list[Any]:
        blob = BlobResourceContents(uri="file:///a.zip", blob="UEsDBA==")
        return [EmbeddedResource(type="resource", resource=blob)]

    @server.tool()
    def refusal(city: str) -> CallToolResult:
        return CallToolResult(
            content=[], structured_content={"code": "E42", "city": city}, is_error=True
        )

    @server.tool()
    def long_refusal(city: str) -> CallToolResult:
        return CallToolResult(content=[], structured_content={"detail": BIG}, is_error=True)

    @server.tool(structured_output=False)
    def long_text_refusal(city: str) -> str:
        raise ToolError(BIG)

    @server.tool(structured_output=False)
    def nested(n: int) -> str:
        return "[" * n + "]" * n

    @server.tool(structured_output=False)
    def nested_note(n: int) -> str:
        return "[" * n + "]" * n

    return server


RECORDS = {
    "type": "array",
    "items": {"$ref": "#/$defs/Record"},
    "$defs": {
        "Record": {
            "type": "object",
            "properties": {"id": {"type": "integer"}},
            "required": ["id"],
        }
    },
}
SPECS: tuple[ToolSpec, ...] = (
    almanac_spec("tags", N, STRINGS),
    almanac_spec("serialized_tags", N, STRINGS),
    almanac_spec("records", N, RECORDS),
    almanac_spec("counts", N, {"type": "array", "items": {"type": "integer"}}),
    almanac_spec("year", CITY, {"type": "string"}),
    almanac_spec("verdict", CITY, {"type": "string", "enum": ["true", "false"]}),
    almanac_spec("level", CITY, {"type": ["string", "null"]}),
    almanac_spec("depth", CITY, {"type": "integer"}),
    almanac_spec("chart", CITY, {"type": "object"}),
    almanac_spec("readme", CITY, {"type": "string"}),
    almanac_spec("archive", CITY, {"type": "string"}),
    almanac_spec("refusal", CITY, {"type": "object"}),
    almanac_spec("long_refusal", CITY, {"type": "object"}),
    almanac_spec("long_text_refusal", CITY, {"type": "object"}),
    almanac_spec("nested", N, {"type": "array"}),
    almanac_spec("nested_note", N, {"type": "string"}),
)
DECLARATION = almanac(SPECS, {spec.id: spec.id.removeprefix("almanac.") for spec in SPECS})


@pytest.fixture(params=sorted(MODES))
def mode(request: pytest.FixtureRequest) -> str:
    return MODES[request.param]


async def call(mode: str, tool: str, args: dict[str, Any]) -> ToolResultPart:
    """The result the model gets of one call of ``tool`` through a run."""
    async with Client(build_server(), mode=mode) as client:
        rt = Runtime()
        rt.register_agent(
            AgentDefinition(id=AGENT, description="Almanac questions.", specs=SPECS),
            planner=ScriptedPlanner([calls((f"almanac.{tool}", args)), answer()]),
            executors={
                "helpdesk.almanac": MCPToolsetExecutor(SessionCaller(client.session), DECLARATION)
            },
        )
        outcome = await rt.client(AGENT).run("Almanac?")
    (part,) = [
        part
        for message in outcome.transcript
        for part in message.parts
        if isinstance(part, ToolResultPart)
    ]
    return part


def value(part: ToolResultPart) -> Any:
    assert not part.is_error, part.content
    return json.loads(part.content)


# ---------------------------------------------------------------- through the runtime


async def test_an_unstructured_list_keeps_its_shape(mode: str) -> None:
    # One block per item: one item stays a list, no item is the empty list, and a string
    # item that looks like a number stays a string.
    assert value(await call(mode, "tags", {"n": 1})) == ["alpha"]
    assert value(await call(mode, "tags", {"n": 0})) == []
    assert value(await call(mode, "tags", {"n": 3})) == ["alpha", "beta", "2024"]
    # Items of other types are read as JSON.
    assert value(await call(mode, "counts", {"n": 1})) == [7]


async def test_a_list_serialized_into_one_block_is_the_list(mode: str) -> None:
    # The whole array in one text block is that array, not a one-item list holding it.
    assert value(await call(mode, "serialized_tags", {"n": 2})) == ["alpha", "beta"]
    assert value(await call(mode, "serialized_tags", {"n": 1})) == ["alpha"]
    assert value(await call(mode, "serialized_tags", {"n": 0})) == []
    assert value(await call(mode, "records", {"n": 2})) == [{"id": 1}, {"id": 2}]
    # An array whose items break the declared type stays whole: the result check names the
    # item at fault.
    error = error_of(await call(mode, "records", {"n": 3}))
    assert error["kind"] == "invalid_result"
    assert [issue["path"] for issue in error["issues"]] == ["[2].id"]


async def test_an_unstructured_string_is_its_text(mode: str) -> None:
    assert value(await call(mode, "year", {"city": "Oslo"})) == "2024"
    assert value(await call(mode, "verdict", {"city": "Oslo"})) == "true"
    assert value(await call(mode, "level", {"city": "Oslo"})) == "null"
    # A declared number is still read as JSON.
    assert value(await call(mode, "depth", {"city": "Oslo"})) == 42


async def test_text_beside_an_image_fails_naming_both_kinds(mode: str) -> None:
    error = error_of(await call(mode, "chart", {"city": "Oslo"}))
    assert error["kind"] == "tool_failed"
    assert error["message"] == (
        "almanac.chart failed: MCPResultError: MCP tool 'chart' returned image content beside "
        "text and no structured content; a tool result is one JSON value, which cannot hold "
        "image content: have the server send structured content, or text only"
    )


async def test_an_embedded_text_resource_is_text(mode: str) -> None:
    assert value(await call(mode, "readme", {"city": "Oslo"})) == "2024 was wet"
    error = error_of(await call(mode, "archive", {"city": "Oslo"}))
    assert "'archive' returned binary resource content and no structured" in error["message"]


async def test_a_structured_error_is_the_message(mode: str) -> None:
    error = error_of(await call(mode, "refusal", {"city": "Oslo"}))
    assert error["message"] == (
        "almanac.refusal failed: MCPToolError: MCP tool 'refusal' reported an error: "
        '{"code":"E42","city":"Oslo"}'
    )
    long = error_of(await call(mode, "long_refusal", {"city": "Oslo"}))["message"]
    shown = '{"detail":"' + BIG
    assert shown[:MAX_ERROR_CHARS] + "... (513 more characters)" in long
    assert BIG not in long
    # Text is held to the same bound (it reached the model whole: 100,000 characters of a
    # server's failure were 100,000 characters of the model's context).
    cut = error_of(await call(mode, "long_text_refusal", {"city": "Oslo"}))["message"]
    said = "Error executing tool long_text_refusal: " + BIG
    assert cut == (
        "almanac.long_text_refusal failed: MCPToolError: MCP tool 'long_text_refusal' "
        f"reported an error: {said[:MAX_ERROR_CHARS]}... ({len(said) - MAX_ERROR_CHARS} more "
        "characters)"
    )


async def test_text_nested_too_deeply_fails_naming_the_tool_and_the_limit(mode: str) -> None:
    """5,000 nested arrays raised a bare RecursionError from the JSON parser (the model read
    "maximum recursion depth exceeded", naming nothing); a few hundred passed the parser and
    broke validation or encoding further on. Text read as JSON is held to a stated depth."""
    deepest: list[Any] = [[]]
    for _ in range(MAX_MCP_TEXT_DEPTH - 2):
        deepest = [deepest]
    assert value(await call(mode, "nested", {"n": MAX_MCP_TEXT_DEPTH})) == deepest
    for depth in (MAX_MCP_TEXT_DEPTH + 1, 400, 5000):
        error = error_of(await call(mode, "nested", {"n": depth}))
        assert error == {
            "kind": "tool_failed",
            "message": "almanac.nested failed: MCPResultError: MCP tool 'nested' returned text "
            f"holding JSON nested deeper than {MAX_MCP_TEXT_DEPTH} levels (the limit for an MCP "
            "tool's text result); have the server send a flatter result",
        }
    # A string result is the text as it is: never read as JSON, never refused.
    assert value(await call(mode, "nested_note", {"n": 5000})) == "[" * 5000 + "]" * 5000


# ---------------------------------------------------------------- result mapping


def text(value: str) -> TextContent:
    return TextContent(type="text", text=value)


def test_text_is_read_by_the_declared_type() -> None:
    one = CallToolResult(content=[text("1")])
    assert tool_value("t", one, {"type": "string"}) == "1"
    assert tool_value("t", one, {"const": "1"}) == "1"
    assert tool_value("t", one, {"type": ["null", "string"]}) == "1"
    assert tool_value("t", one, {"type": "array", "items": {"type": "string"}}) == ["1"]
    assert tool_value("t", one, {"type": "array"}) == [1]
    assert tool_value("t", one, {"type": ["string", "integer"]}) == 1
    assert tool_value("t", one, {"enum": ["1", 1]}) == 1
    assert tool_value("t", one, None) == 1
    empty = CallToolResult(content=[])
    assert tool_value("t", empty, {"type": ["array", "null"]}) == []
    assert tool_value("t", empty, {"type": "string"}) is None
    # Several blocks for a string result stay several (the result check then refuses them).
    two = CallToolResult(content=[text("a"), text("2")])
    assert tool_value("t", two, {"type": "string"}) == ["a", 2]


def test_non_text_content_is_named_with_every_kind() -> None:
    link = ResourceLink(type="resource_link", uri="file:///a", name="a")
    with pytest.raises(MCPResultError) as caught:
        tool_value("t", CallToolResult(content=[link, text("see the link")]))
    assert caught.value.kinds == ("resource link", "text")
    assert str(caught.value).startswith("MCP tool 't' returned resource link content beside text")


def test_an_error_without_text_names_its_content() -> None:
    image = ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")
    with pytest.raises(MCPToolError, match=r"\(no message; image content\)$"):
        tool_value("t", CallToolResult(content=[image], is_error=True))


def test_one_block_holding_an_array_is_the_array_it_holds() -> None:
    records = [{"id": 1}, {"id": 2}]
    whole = CallToolResult(content=[text(json.dumps(records))])
    assert tool_value("t", whole, RECORDS) == records
    assert tool_value("t", whole, {"type": "array"}) == records
    numbers = CallToolResult(content=[text("[1, 2.50]")])
    assert tool_value("t", numbers, {"type": "array", "items": {"type": "number"}}) == [
        1,
        Decimal("2.50"),
    ]
    # Several blocks stay one item each, even when each holds an array.
    two = CallToolResult(content=[text("[1]"), text("[2]")])
    assert tool_value("t", two, {"type": "array"}) == [[1], [2]]
    # A JSON array that is not of the declared type, while its text as one item is: one item.
    pair = CallToolResult(content=[text("[1, 2]")])
    assert tool_value("t", pair, STRINGS) == ["[1, 2]"]
    nested = {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}
    assert tool_value("t", pair, nested) == [[1, 2]]
    assert tool_value("t", CallToolResult(content=[text("[[1, 2]]")]), nested) == [[1, 2]]
    # Neither reading fits: the array stays whole, for the result check to name its items.
    bad = CallToolResult(content=[text('[{"id": "x"}]')])
    assert tool_value("t", bad, RECORDS) == [{"id": "x"}]


def test_one_block_of_json_array_text_for_a_list_of_strings_is_the_whole_list() -> None:
    # The ambiguous case: '["a","b"]' is the list ["a", "b"] (a server that serialized its
    # whole answer) or the one item '["a","b"]' (a server sending one block per item). It
    # reads as the whole list; the one-item reading only where the whole one does not fit.
    one = CallToolResult(content=[text('["a", "b"]')])
    assert tool_value("t", one, STRINGS) == ["a", "b"]
    assert tool_value("t", CallToolResult(content=[text("[]")]), STRINGS) == []
    long_words = {"type": "array", "items": {"type": "string", "minLength": 3}}
    assert tool_value("t", CallToolResult(content=[text('["a"]')]), long_words) == ['["a"]']
    # Items that look like JSON arrays stay items when they come one block each.
    several = CallToolResult(content=[text('["a"]'), text('["b", "c"]')])
    assert tool_value("t", several, STRINGS) == ['["a"]', '["b", "c"]']


def test_unions_and_references_are_read_by_the_alternative_that_fits() -> None:
    def read(raw: str, schema: dict[str, Any]) -> Any:
        return tool_value("t", CallToolResult(content=[text(raw)]), schema)

    optional = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert read("2024", optional) == "2024"
    assert read("null", optional) == "null"  # as for {"type": ["string", "null"]}
    assert tool_value("t", CallToolResult(content=[]), optional) is None
    optional_list = {"anyOf": [STRINGS, {"type": "null"}]}
    assert read("alpha", optional_list) == ["alpha"]
    assert read('["a", "b"]', optional_list) == ["a", "b"]
    assert tool_value("t", CallToolResult(content=[]), optional_list) == []
    # A reference is read as what it names, items too.
    codes = {
        "type": "array",
        "items": {"$ref": "#/$defs/Code"},
        "$defs": {"Code": {"type": "string", "enum": ["7", "true"]}},
    }
    assert tool_value("t", CallToolResult(content=[text("7"), text("true")]), codes) == [
        "7",
        "true",
    ]
    assert read("7", {"$ref": "#/$defs/Code", "$defs": codes["$defs"]}) == "7"
    # Exactly one alternative fits: its reading.
    word_or_count = {"oneOf": [{"type": "integer"}, {"type": "string", "pattern": "^[a-z]+$"}]}
    assert read("true", {"type": ["string", "integer"]}) == "true"
    assert read("12", word_or_count) == 12
    assert read("many", word_or_count) == "many"
    # Both fit ("1" the string and 1 the number): plain JSON reading, as before.
    assert read("1", {"anyOf": [{"type": "string"}, {"type": "integer"}]}) == 1
    # None fits: plain JSON reading, which the result check then refuses.
    assert read("true", {"anyOf": [{"type": "integer"}, {"type": "object"}]}) is True
    # A reference that cannot be followed leaves the text to plain JSON reading.
    assert read("7", {"$ref": "#/$defs/Missing"}) == 7
    assert read("7", {"$ref": "#"}) == 7
