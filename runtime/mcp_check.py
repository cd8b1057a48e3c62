"""Checking, before any run, that an external MCP server serves what the design declares.

Calls alone find a drifted server late: a tool the server lacks answers ``Unknown tool`` at
the model's first call, an input schema that changed fails inside the server in the middle of
a run. :func:`check_mcp_server` asks the server for its tools once (``tools/list``, every page)
and compares them with the toolset's :class:`MCPDeclaration` (generated as
``MCP_DECLARATION`` in the toolset's ``specs.py``): every declared tool must be listed under
its server name, and its ``inputSchema`` must take what the design's payload schema lets
through (the rule of :mod:`agentgen.runtime.contracts.schema_match`). Every problem is
reported at once in one :class:`MCPServerMismatch`.

Output schemas are not compared: the runtime already validates every result against the
declared ``Return`` when it arrives (drift becomes an ``invalid_result`` naming the tool), an
``outputSchema`` is optional in MCP (servers answering in text have none), and a server's
promise about its output says nothing of what it does send. Inputs have no such check of
their own on the way in, which is what this one adds.

Like :mod:`agentgen.runtime.mcp`, this module imports the ``mcp`` SDK only when it checks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

from agentgen.runtime.contracts.schema_match import input_mismatches
from agentgen.runtime.contracts.specs import ToolSpec

if TYPE_CHECKING:
    from mcp.types import ListToolsResult, PaginatedRequestParams, Tool

__all__ = [
    "MAX_LIST_PAGES",
    "MCPCheckError",
    "MCPDeclaration",
    "MCPServerCheck",
    "MCPServerMismatch",
    "MCPToolProblem",
    "ToolListing",
    "check_mcp_server",
    "compare_server_tools",
]

logger = logging.getLogger(__name__)

#: Pages of ``tools/list`` read before the listing counts as endless (a server that never
#: stops handing out new cursors).
MAX_LIST_PAGES = 1000
#: Server tool names shown beside a missing tool.
_SHOWN_NAMES = 20


class ToolListing(Protocol):
    """What the check needs of a session: the SDK's ``ClientSession.list_tools``."""

    async def list_tools(
        self, *, params: PaginatedRequestParams | None = None
    ) -> ListToolsResult: ...


@dataclass(frozen=True)
class MCPDeclaration:
    """What the design declares an external MCP server serves for one toolset.

    Generated as ``MCP_DECLARATION`` in the ``specs.py`` of every ``FromExternalMCP``
    toolset. ``toolset`` is the registration name, ``service`` and ``server_toolset`` the two
    arguments of ``FromExternalMCP``, ``names`` maps tool IDs to the server's tool names.
    """

    toolset: str
    service: str
    server_toolset: str
    names: Mapping[str, str]
    specs: tuple[ToolSpec, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", MappingProxyType(dict(self.names)))
        unnamed = [spec.id for spec in self.specs if spec.id not in self.names]
        if unnamed:
            raise ValueError(
                f"MCP declaration of toolset {self.toolset!r} has no server name for "
                f"{', '.join(unnamed)}; regenerate the toolset's specs.py"
            )

    @property
    def subject(self) -> str:
        """How errors name the toolset and its server."""
        return (
            f"toolset {self.toolset!r} (MCP service {self.service!r}, "
            f"toolset {self.server_toolset!r})"
        )


@dataclass(frozen=True)
class MCPToolProblem:
    """One way the server differs from a declared tool."""

    #: The tool's name on the server.
    tool: str
    #: The tool's ID in the design.
    tool_id: str
    problem: str

    def __str__(self) -> str:
        return f"tool {self.tool!r} ({self.tool_id}): {self.problem}"


@dataclass(frozen=True)
class MCPServerCheck:
    """A server that serves what the design declares. ``extra_tools`` are the tools the
    server lists beyond the declared ones: allowed (a server may serve several toolsets and
    agents), reported here and in a debug log line, never an error."""

    declaration: MCPDeclaration
    extra_tools: tuple[str, ...]


class MCPCheckError(Exception):
    """The server could not be checked, or did not pass (:class:`MCPServerMismatch`)."""

    def __init__(self, declaration: MCPDeclaration, message: str) -> None:
        super().__init__(message)
        self.declaration = declaration


class MCPServerMismatch(MCPCheckError):
    """The server does not serve what the design declares; ``problems`` lists every
    difference found, the message names each and what to do."""

    def __init__(self, declaration: MCPDeclaration, problems: Sequence[MCPToolProblem]) -> None:
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        lines = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(
            declaration,
            f"the MCP server of {declaration.subject} does not serve what the design declares "
            f"({count}):\n{lines}\nFix the server so that it serves the declared tools, or "
            "update the design to what the server now serves and regenerate (agentgen gen).",
        )
        self.problems = tuple(problems)


async def check_mcp_server(session: ToolListing, declaration: MCPDeclaration) -> MCPServerCheck:
    """List the server's tools through ``session`` (a connected ``mcp.ClientSession``) and
    compare them with ``declaration``.

    Raises :class:`MCPServerMismatch` listing every problem, or :class:`MCPCheckError` when
    ``tools/list`` fails (the SDK's error chained) or never ends.
    """
    return compare_server_tools(declaration, await _list_tools(session, declaration))


def compare_server_tools(declaration: MCPDeclaration, tools: Sequence[Tool]) -> MCPServerCheck:
    """Compare a ``tools/list`` answer (every page) with ``declaration``."""
    listed: dict[str, list[Tool]] = {}
    for tool in tools:
        listed.setdefault(tool.name, []).append(tool)
    problems: list[MCPToolProblem] = []
    for spec in declaration.specs:
        name = declaration.names[spec.id]
        found = listed.get(name, [])
        if not found:
            problems.append(MCPToolProblem(name, spec.id, _missing(listed)))
            continue
        if len(found) > 1:
            problems.append(
                MCPToolProblem(name, spec.id, f"listed {len(found)} times by the server")
            )
            continue
        for mismatch in input_mismatches(spec.payload.schema(), found[0].input_schema):
            problems.append(MCPToolProblem(name, spec.id, f"input {mismatch}"))
    if problems:
        raise MCPServerMismatch(declaration, problems)
    declared = set(declaration.names.values())
    extra = tuple(sorted(name for name in listed if name not in declared))
    if extra:
        logger.debug(
            "MCP server of %s also serves %s (not declared; allowed)",
            declaration.subject,
            ", ".join(extra),
        )
    return MCPServerCheck(declaration, extra)


def _missing(listed: Mapping[str, object]) -> str:
    if not listed:
        return "not served: the server lists no tools"
    names = sorted(listed)
    shown = ", ".join(names[:_SHOWN_NAMES])
    more = f" and {len(names) - _SHOWN_NAMES} more" if len(names) > _SHOWN_NAMES else ""
    return f"not served: the server lists {shown}{more}"


async def _list_tools(session: ToolListing, declaration: MCPDeclaration) -> list[Tool]:
    from mcp.types import PaginatedRequestParams

    tools: list[Tool] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_LIST_PAGES):
        try:
            params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
            page = await session.list_tools(params=params)
        except Exception as error:
            raise MCPCheckError(
                declaration,
                f"could not check the MCP server of {declaration.subject}: tools/list failed "
                f"({type(error).__name__}: {error}). Check that the session is connected to "
                "that server and that it serves tools.",
            ) from error
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
        if cursor in seen:
            raise MCPCheckError(
                declaration,
                f"could not check the MCP server of {declaration.subject}: tools/list handed "
                f"out the cursor {cursor!r} twice (its pagination loops); fix the server.",
            )
        seen.add(cursor)
    raise MCPCheckError(
        declaration,
        f"could not check the MCP server of {declaration.subject}: tools/list still had "
        f"more pages after {MAX_LIST_PAGES}; fix the server's pagination.",
    )
