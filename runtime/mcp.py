"""The official MCP Python SDK as the :class:`~agentgen.runtime.agents.executors.MCPCaller` of an
external MCP toolset.

Generated agent configs ask the application for one ``MCPCaller`` per external MCP toolset;
:class:`SessionCaller` is that caller over a connected ``mcp.ClientSession`` (or ``mcp.Client``,
or anything else with the SDK's ``call_tool``)::

    async with mcp.Client(server_url) as client:
        config = TriageAgentConfig(..., weather_mcp=SessionCaller(client.session))

The caller turns the SDK's ``CallToolResult`` into the JSON value the tool's declared ``Return``
describes; the runtime then validates that value against the tool's result contract, so a
server that drifted from the design becomes an ``invalid_result`` tool error rather than
unchecked text in the transcript. A result the server flags with ``isError`` raises
:class:`MCPToolError`, which the runtime turns into a ``tool_failed`` error the model can read.

The ``mcp`` package is only needed to *use* this module, never to import it: the SDK is an
optional dependency, and applications without MCP toolsets must be able to import
``agentgen.runtime`` without it. Its types are imported for type checking only, and nothing
here touches the SDK at run time beyond the session the application hands in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from agentgen.runtime.agents.executors import ToolContext, UnknownToolError
from agentgen.runtime.contracts.codecs import decode_exact, encode_exact
from agentgen.runtime.mcp_check import MCPDeclaration, ToolListing, check_mcp_server

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ContentBlock

__all__ = [
    "MCPCaller",
    "MCPResultError",
    "MCPToolError",
    "MCPToolsetExecutor",
    "SessionCaller",
    "ToolListingSession",
    "ToolSession",
    "tool_arguments",
    "tool_value",
]


class MCPCaller(Protocol):
    """A client of an external MCP server (the application wires a real session)."""

    async def call_tool(self, name: str, arguments: Any) -> Any: ...


class MCPToolsetExecutor:
    """Executor of an external MCP toolset: tool IDs map to the server's tool names."""

    def __init__(self, caller: MCPCaller, names: Mapping[str, str]) -> None:
        self._caller = caller
        self._names = MappingProxyType(dict(names))

    async def execute(self, tool_id: str, payload: Any, context: ToolContext) -> Any:
        name = self._names.get(tool_id)
        if name is None:
            raise UnknownToolError(f"MCP toolset has no tool {tool_id!r}")
        return await self._caller.call_tool(name, payload)


class ToolSession(Protocol):
    """What :class:`SessionCaller` needs of a session: the SDK's ``call_tool``.

    ``mcp.ClientSession`` and ``mcp.Client`` both satisfy it; a protocol rather than the
    concrete class keeps the module importable without the SDK and lets applications wrap a
    session (retries, tracing) without subclassing it.
    """

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> CallToolResult: ...


class ToolListingSession(ToolSession, ToolListing, Protocol):
    """A session that also lists its server's tools, as ``mcp.ClientSession`` does: what
    :meth:`SessionCaller.checked` needs (``mcp.Client`` lists with another signature; pass its
    ``.session``)."""


class MCPToolError(Exception):
    """The MCP server ran the tool and reported a failure (``isError`` in its result).

    ``tool`` is the server's tool name, ``message`` the text the server sent (what the model
    gets to read, so it can correct the call), ``result`` the SDK's whole result.
    """

    def __init__(self, tool: str, message: str, result: CallToolResult | None = None) -> None:
        super().__init__(f"MCP tool {tool!r} reported an error: {message}")
        self.tool = tool
        self.message = message
        self.result = result


class MCPResultError(ValueError):
    """The server's result has no JSON value: content other than text (images, audio,
    resources) and no structured content. Nothing in a tool's JSON result contract could
    hold it, so the call fails rather than handing the model a placeholder."""

    def __init__(self, tool: str, kinds: Sequence[str]) -> None:
        super().__init__(
            f"MCP tool {tool!r} returned {', '.join(kinds)} content and no structured content; "
            "only structured content or text has a JSON value"
        )
        self.tool = tool
        self.kinds = tuple(kinds)


class SessionCaller:
    """An :class:`~agentgen.runtime.agents.executors.MCPCaller` over an MCP SDK session.

    The session must be connected (entered and, for a ``ClientSession``, initialized) for as
    long as runs may call the toolset; its lifetime stays the application's, since one session
    may serve several toolsets and agents.
    """

    def __init__(self, session: ToolSession) -> None:
        self._session = session

    @classmethod
    async def checked(
        cls, session: ToolListingSession, declaration: MCPDeclaration
    ) -> SessionCaller:
        """A caller over ``session`` once its server has passed
        :func:`~agentgen.runtime.mcp_check.check_mcp_server` against ``declaration`` (the
        toolset's generated ``MCP_DECLARATION``): every declared tool served, with an input
        schema that takes what the design sends.

        Raises :class:`~agentgen.runtime.mcp_check.MCPServerMismatch` (every problem at once)
        or :class:`~agentgen.runtime.mcp_check.MCPCheckError` (``tools/list`` failed) before
        any run can call the server.
        """
        await check_mcp_server(session, declaration)
        return cls(session)

    async def call_tool(self, name: str, arguments: Any) -> Any:
        """Call ``name`` with the validated ``arguments`` and return the result's JSON value.

        Raises :class:`MCPToolError` when the server reports the call failed and
        :class:`MCPResultError` when the result has no JSON value; errors of the session
        itself (protocol errors, an unknown tool, the SDK rejecting structured content that
        breaks the server's own output schema) propagate as the SDK raised them.
        """
        result = await self._session.call_tool(name, tool_arguments(arguments))
        return tool_value(name, result)


def tool_arguments(payload: Any) -> dict[str, Any]:
    """The validated payload as the JSON object MCP sends as ``arguments``.

    Schema-typed payloads hold non-integral numbers as ``Decimal`` (the runtime keeps them
    exact), which the SDK's pydantic serializer would send as *strings*; rewriting the payload
    through its exact JSON text gives plain JSON types. A tool without ``Args`` gets an empty
    generated model, sent as ``{}``.
    """
    if isinstance(payload, BaseModel):
        payload = payload.model_dump(mode="json", by_alias=True)
    elif payload is None:
        payload = {}
    value = json.loads(encode_exact(payload))
    if not isinstance(value, dict):
        raise TypeError(f"MCP tool arguments must be a JSON object, got {type(value).__name__}")
    return value


def tool_value(name: str, result: CallToolResult) -> Any:
    """The JSON value of the result of MCP tool ``name``.

    In order of preference:

    * ``structuredContent`` when the server sent it (even ``null``): it is the typed result
      the MCP spec intends for programmatic callers, while the text beside it is a rendering.
    * No content at all: ``null`` (what a tool without ``Return`` answers).
    * One text block: its JSON value when the text is JSON (servers that predate structured
      output serialize results into text), else the text itself.
    * Several text blocks: the list of their values, each read as above; the SDK's own
      ``MCPServer`` renders an unstructured list one block per item.

    Raises :class:`MCPToolError` for an ``isError`` result, whatever it holds, and
    :class:`MCPResultError` for non-text content without structured content.
    """
    if result.is_error:
        texts = [block.text for block in result.content if block.type == "text"]
        raise MCPToolError(name, "\n".join(texts) or "(no message)", result)
    if result.structured_content is not None or "structured_content" in result.model_fields_set:
        return result.structured_content
    others = [block.type for block in result.content if block.type != "text"]
    if others:
        raise MCPResultError(name, sorted(set(others)))
    values = [_text_value(block) for block in result.content]
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _text_value(block: ContentBlock) -> Any:
    assert block.type == "text"
    try:
        # Exact numbers, as the runtime's own codecs parse JSON (``1.10`` stays ``1.10``).
        return decode_exact(block.text)
    except ValueError:
        return block.text
