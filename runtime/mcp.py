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
:class:`MCPToolError`, which the runtime turns into a ``tool_failed`` error the model can read;
a call whose answer the session lost raises :class:`MCPAnswerLostError`, an ``outcome_unknown``.

The ``mcp`` package is only needed to *use* this module, never to import it: the SDK is an
optional dependency, and applications without MCP toolsets must be able to import
``agentgen.runtime`` without it. Its types are imported for type checking only, and nothing
here touches the SDK at run time beyond the session the application hands in.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from agentgen.runtime.agents.executors import OutcomeUnknownError, ToolContext, UnknownToolError
from agentgen.runtime.contracts.codecs import NestingError, encode_exact
from agentgen.runtime.mcp_changes import Recheck, ToolListChanges
from agentgen.runtime.mcp_check import MCPDeclaration, ToolListing, check_mcp_server
from agentgen.runtime.mcp_text import read_texts

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ContentBlock

__all__ = [
    "InexactNumberError",
    "MCPAnswerLostError",
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
    """A client of an external MCP server (the application wires a real session).

    ``result_schema`` is the JSON Schema of the tool's declared ``Return``: text results carry
    no type, so the caller needs it to read ``"2024"`` as the string a ``-> str`` tool meant
    (see :func:`tool_value`)."""

    async def call_tool(
        self, name: str, arguments: Any, result_schema: Mapping[str, Any] | None = None
    ) -> Any: ...


class MCPToolsetExecutor:
    """Executor of an external MCP toolset: tool IDs map to the server's tool names and to
    the declared result types, both from the toolset's generated ``MCP_DECLARATION``."""

    def __init__(self, caller: MCPCaller, declaration: MCPDeclaration) -> None:
        self._caller = caller
        self._declaration = declaration
        self._results = MappingProxyType(
            {spec.id: MappingProxyType(spec.result.schema()) for spec in declaration.specs}
        )

    async def execute(self, tool_id: str, payload: Any, context: ToolContext) -> Any:
        name = self._declaration.names.get(tool_id)
        if name is None:
            raise UnknownToolError(f"MCP {self._declaration.subject} has no tool {tool_id!r}")
        return await self._caller.call_tool(name, payload, self._results.get(tool_id))


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

    ``tool`` is the server's tool name, ``message`` the text the server sent, cut after
    :data:`MAX_ERROR_CHARS` (what the model gets to read, so it can correct the call),
    ``result`` the SDK's whole result.
    """

    def __init__(self, tool: str, message: str, result: CallToolResult | None = None) -> None:
        super().__init__(f"MCP tool {tool!r} reported an error: {message}")
        self.tool = tool
        self.message = message
        self.result = result


class MCPResultError(ValueError):
    """The server's result has no JSON value: content other than text (images, audio, binary
    or linked resources) and no structured content. Nothing in a tool's JSON result contract
    could hold that content, so the call fails, naming every kind the result held, rather than
    handing the model a placeholder or only the text beside it.

    Also text holding JSON nested deeper than the runtime reads
    (:data:`~agentgen.runtime.contracts.limits.MAX_MCP_TEXT_DEPTH`): ``reason`` says so then,
    in place of the kinds."""

    def __init__(self, tool: str, kinds: Sequence[str], *, reason: str | None = None) -> None:
        if reason is None:
            held = [kind for kind in kinds if kind != "text"]
            beside = " beside text" if "text" in kinds else ""
            reason = (
                f"{', '.join(held)} content{beside} and no structured content; a tool result "
                f"is one JSON value, which cannot hold {', '.join(held)} content: have the "
                "server send structured content, or text only"
            )
        super().__init__(f"MCP tool {tool!r} returned {reason}")
        self.tool = tool
        self.kinds = tuple(kinds)


class MCPAnswerLostError(OutcomeUnknownError):
    """The session lost the answer to a ``tools/call`` it had sent: its read timed out, or
    the connection closed while the call was in flight. The server may have run the tool, so
    the model reads ``outcome_unknown`` ("do not retry"), not ``tool_failed``.

    ``tool`` is the server's tool name, ``cause`` the SDK's error.
    """

    def __init__(self, tool: str, cause: Exception) -> None:
        super().__init__(
            f"MCP tool {tool!r}: the session lost the answer to the call "
            f"({type(cause).__name__}: {cause}), so the server may have run the tool"
        )
        self.tool = tool
        self.cause = cause


class SessionCaller:
    """An :class:`~agentgen.runtime.agents.executors.MCPCaller` over an MCP SDK session.

    The session must be connected (entered and, for a ``ClientSession``, initialized) for as
    long as runs may call the toolset; its lifetime stays the application's, since one session
    may serve several toolsets and agents.
    """

    def __init__(self, session: ToolSession) -> None:
        self._session = session
        self._recheck: Recheck | None = None
        #: Whether a call found the connection closed (and none answered since): a later call
        #: failing the same way was never sent.
        self._closed = False

    @classmethod
    async def checked(
        cls,
        session: ToolListingSession,
        declaration: MCPDeclaration,
        changes: ToolListChanges | None = None,
    ) -> SessionCaller:
        """A caller over ``session`` once its server has passed
        :func:`~agentgen.runtime.mcp_check.check_mcp_server` against ``declaration`` (the
        toolset's generated ``MCP_DECLARATION``): every declared tool served, with an input
        schema that takes what the design sends.

        ``changes``, the session's ``message_handler``, makes the caller check again before
        its next call whenever the server announced ``tools/list_changed``: a call then fails
        with the mismatch rather than reach a server that no longer serves the design, and the
        fresh listing renews the SDK's cached output schemas.

        Raises :class:`~agentgen.runtime.mcp_check.MCPServerMismatch` (every problem at once)
        or :class:`~agentgen.runtime.mcp_check.MCPCheckError` (``tools/list`` failed) before
        any run can call the server.
        """
        seen = changes.count if changes is not None else 0
        await check_mcp_server(session, declaration)
        caller = cls(session)
        if changes is not None:
            caller._recheck = Recheck(session, declaration, changes, seen)
        return caller

    async def call_tool(
        self, name: str, arguments: Any, result_schema: Mapping[str, Any] | None = None
    ) -> Any:
        """Call ``name`` with the validated ``arguments`` and return the result's JSON value,
        its text read by ``result_schema`` (the declared ``Return``; see :func:`tool_value`).

        Raises :class:`MCPToolError` when the server reports the call failed,
        :class:`MCPResultError` when the result has no JSON value, and the check's
        :class:`~agentgen.runtime.mcp_check.MCPCheckError` when the server announced changed
        tools and no longer serves what the design declares; :class:`InexactNumberError`, and
        nothing is sent, when an argument's number has more digits than a double holds. The
        SDK's errors for an answer that did not come (the session's read timeout, the
        connection closing on the call, the transport losing the answer's stream) become
        :class:`MCPAnswerLostError`, which the model reads as ``outcome_unknown``: the server
        may have run the tool. Other errors of the session itself (protocol errors, an
        unknown tool, the SDK rejecting structured content that breaks the server's own output
        schema, a call on a session an earlier call found closed) propagate as the SDK raised
        them.
        """
        if self._recheck is not None:
            await self._recheck.current()
        try:
            sendable = tool_arguments(arguments)
        except InexactNumberError as exc:
            raise InexactNumberError(f"MCP tool {name!r}: {exc}") from None
        # Read before the call: calls in flight together all started on an open session.
        closed_before = self._closed
        try:
            result = await self._session.call_tool(name, sendable)
        except Exception as exc:
            lost = _lost_answer(exc)
            if lost == "closed":
                self._closed = True
            if lost in ("timed out", "cut") or (lost == "closed" and not closed_before):
                raise MCPAnswerLostError(name, exc) from exc
            raise
        self._closed = False  # an answer: the session (or the application's wrapper) is open
        return tool_value(name, result, result_schema)


def _lost_answer(exc: Exception) -> str | None:
    """``"timed out"``, ``"closed"`` or ``"cut"`` when ``exc`` is the SDK's error for a request
    whose answer did not come (its read timeout, which starts only once the request is written;
    a connection that closed; the transport giving up on this one request's answer), else None.

    The SDK raises the same connection-closed error ("Connection closed") for a request it
    could not send on a session already closed, and for one in flight when the connection
    closed: the caller tells them apart by whether an earlier call already found the session
    closed (the first call to find it so, which may not have been sent, is reported as possibly
    run: the safe side). A connection-closed error with other words is a transport's for one
    request it sent, on a session that stays open (streamable HTTP: "SSE stream ended without
    a response", when a proxy or a restarting server cut the answer's stream): ``"cut"``, lost
    whatever came before. The SDK is imported here only: a session that raised is the SDK's."""
    try:
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT
    except ImportError:  # a session of the application's own making, not the SDK's
        return None
    if not isinstance(exc, MCPError):
        return None
    if exc.code == REQUEST_TIMEOUT:
        return "timed out"
    if exc.code == CONNECTION_CLOSED:
        return "closed" if exc.message == _SESSION_CLOSED else "cut"
    return None


#: The words of the SDK's connection-closed error when the session itself closed (its
#: dispatcher's, for calls in flight and calls made after); a transport that loses one
#: request's answer says why in other words.
_SESSION_CLOSED = "Connection closed"


class InexactNumberError(ValueError):
    """An argument's number would not reach the MCP server as validated: the SDK sends
    non-integral numbers as doubles, and this one has more digits than a double keeps."""


def tool_arguments(payload: Any) -> dict[str, Any]:
    """The validated payload as the JSON object MCP sends as ``arguments``.

    Schema-typed payloads hold non-integral numbers as ``Decimal`` (the runtime keeps them
    exact), which the SDK's pydantic serializer would send as *strings*; rewriting the payload
    through its exact JSON text gives plain JSON types. A tool without ``Args`` gets an empty
    generated model, sent as ``{}``.

    The SDK sends a non-integral number as a double, so one that a double does not hold (more
    than 15 significant digits, as ``0.123456789012345678``) raises
    :class:`InexactNumberError` rather than reaching the server rounded
    (``0.12345678901234568``): the call is not sent. Integers are sent exactly, however large.
    """
    if isinstance(payload, BaseModel):
        payload = payload.model_dump(mode="json", by_alias=True)
    elif payload is None:
        payload = {}
    value = json.loads(encode_exact(payload), parse_float=_double)
    if not isinstance(value, dict):
        raise TypeError(f"MCP tool arguments must be a JSON object, got {type(value).__name__}")
    return value


def _double(text: str) -> float:
    """The double a JSON number's ``text`` reaches the server as, when it is that number."""
    number = float(text)
    if math.isfinite(number) and Decimal(repr(number)) == Decimal(text):
        return number
    raise InexactNumberError(
        f"the argument {text[:40]}{'...' if len(text) > 40 else ''} would reach the server as "
        f"{number!r}: the MCP SDK sends numbers as doubles, which keep 15 significant digits; "
        "the call was not sent (write the number with fewer digits)"
    )


def tool_value(
    name: str, result: CallToolResult, result_schema: Mapping[str, Any] | None = None
) -> Any:
    """The JSON value of the result of MCP tool ``name``, read as the tool's declared result
    schema (``result_schema``, the JSON Schema of its ``Return``) says.

    In order of preference:

    * ``structuredContent`` when the server sent it (even ``null``): it is the typed result
      the MCP spec intends for programmatic callers, while the text beside it is a rendering.
    * Text content (text blocks, and embedded resources that hold text), read by the declared
      type, since text alone cannot say whether ``2024`` is a number or a string, or whether
      one block is a whole list or its one item: :func:`~agentgen.runtime.mcp_text.read_texts`
      states the rules (a string result is the text as it is; an array result one item per
      block, or the whole array one block holds; unions read by the alternative that fits).

    Raises :class:`MCPToolError` for an ``isError`` result, whatever it holds, and
    :class:`MCPResultError` for content that is not text (images, audio, binary or linked
    resources) without structured content, even beside text: a JSON value cannot hold it, and
    passing on only the text would drop part of the answer unseen.
    """
    if result.is_error:
        raise MCPToolError(name, _error_message(result), result)
    if result.structured_content is not None or "structured_content" in result.model_fields_set:
        return result.structured_content
    texts: list[str] = []
    others: list[str] = []
    for block in result.content:
        text = _block_text(block)
        if text is None:
            others.append(_kind(block))
        else:
            texts.append(text)
    if others:
        raise MCPResultError(name, sorted({*others, *(["text"] if texts else [])}))
    try:
        return read_texts(texts, result_schema)
    except NestingError as exc:
        raise MCPResultError(
            name,
            ["text"],
            reason=f"text holding JSON nested deeper than {exc.limit} levels (the limit for "
            "an MCP tool's text result); have the server send a flatter result",
        ) from None


#: The longest message an ``isError`` result gives the model: its text, or its structured
#: content's compact JSON. The server's words are for the model to correct the call; a
#: server that sends a whole log or page along with its failure should not fill the model's
#: context with it (results have their contract; an error message has only this bound).
MAX_ERROR_CHARS = 2000


def _error_message(result: CallToolResult) -> str:
    """What the model reads of a failed call: its text, else its structured content, both
    bounded, else which content it held."""
    texts = [text for block in result.content if (text := _block_text(block)) is not None]
    if texts:
        return _bounded("\n".join(texts))
    if result.structured_content is not None:
        return _bounded(encode_exact(result.structured_content))
    kinds = sorted({_kind(block) for block in result.content})
    return f"(no message; {', '.join(kinds)} content)" if kinds else "(no message)"


def _bounded(message: str) -> str:
    if len(message) <= MAX_ERROR_CHARS:
        return message
    more = len(message) - MAX_ERROR_CHARS
    return f"{message[:MAX_ERROR_CHARS]}... ({more} more characters)"


def _block_text(block: ContentBlock) -> str | None:
    """The text a content block holds: a text block's, or an embedded text resource's."""
    if block.type == "text":
        return block.text
    if block.type == "resource":
        text = getattr(block.resource, "text", None)
        return text if isinstance(text, str) else None
    return None


def _kind(block: ContentBlock) -> str:
    if block.type == "resource":
        return "binary resource"
    return block.type.replace("_", " ")
