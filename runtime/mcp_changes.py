"""Following an external MCP server that changes its tools while sessions are open.

A server announces a changed tool list with ``notifications/tools/list_changed``. The MCP SDK
does nothing about it: its ``ClientSession`` keeps the output schemas of its last
``tools/list`` and validates structured results against them, and the start-up check
(:func:`~agentgen.runtime.mcp_check.check_mcp_server`) compared the design with tools that may
be gone. :class:`ToolListChanges` is the session's ``message_handler`` that counts those
notifications; a :meth:`~agentgen.runtime.mcp.SessionCaller.checked` caller given it checks
the server again before its next call after one arrived, which lists the tools afresh (so the
SDK's schemas are current too) and fails the call with the mismatch if the server no longer
serves what the design declares.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from agentgen.runtime.mcp_check import MCPDeclaration, ToolListing, check_mcp_server

__all__ = ["ToolListChanges"]

logger = logging.getLogger(__name__)


class ToolListChanges:
    """A ``message_handler`` for ``mcp.Client`` / ``mcp.ClientSession`` that notes every
    ``notifications/tools/list_changed`` of the server; ``forward`` (the application's own
    handler, if any) still receives every message."""

    def __init__(self, forward: Callable[[Any], Awaitable[None]] | None = None) -> None:
        self._forward = forward
        #: Notifications seen so far.
        self.count = 0

    async def __call__(self, message: Any) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self.count += 1
        if self._forward is not None:
            await self._forward(message)


class Recheck:
    """The check a caller repeats after the server changed its tools (one at a time; calls
    made meanwhile wait for it)."""

    def __init__(
        self,
        session: ToolListing,
        declaration: MCPDeclaration,
        changes: ToolListChanges,
        seen: int,
    ) -> None:
        self._session = session
        self._declaration = declaration
        self._changes = changes
        #: The count of changes the last passed check covers (taken before it listed).
        self._seen = seen
        self._lock = asyncio.Lock()

    async def current(self) -> None:
        """Return once the server has been checked since its last announced change; raises
        the check's :class:`~agentgen.runtime.mcp_check.MCPCheckError` otherwise (and checks
        again at the next call)."""
        if self._changes.count == self._seen:
            return
        async with self._lock:
            count = self._changes.count
            if count == self._seen:
                return
            # Counted before listing: a change announced while the check runs is checked at
            # the next call.
            await check_mcp_server(self._session, self._declaration)
            self._seen = count
            logger.info(
                "MCP server of %s changed its tools; checked again: it still serves what the "
                "design declares",
                self._declaration.subject,
            )
