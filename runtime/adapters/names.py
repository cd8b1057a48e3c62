"""Provider-visible tool names.

Canonical tool IDs (``records.search``) never cross the wire: providers accept only
``[A-Za-z0-9_-]{1,64}``. Sanitising is lossy (``a.b_c`` and ``a_b.c`` both become ``a_b_c``), so
each request builds a :class:`NameMap` over every tool it mentions and refuses a collision
instead of letting one tool answer for another. The name of a tool depends only on its ID, so
the same tool keeps its name across requests and in stored transcripts.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass

from agentgen.runtime.adapters.errors import ProviderNameError
from agentgen.runtime.model_client import AdvertisedTools, ToolDefinition

__all__ = [
    "BEDROCK_RESERVED_NAMESPACES",
    "MAX_NAME_LENGTH",
    "NameMap",
    "NameTable",
    "provider_name",
    "shared_table",
]

MAX_NAME_LENGTH = 64
_HASH_LENGTH = 8
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")

#: Namespace names that Bedrock's Responses API keeps for its own tools; a user namespace with
#: one of them is rejected with "collides with an existing tool namespace".
BEDROCK_RESERVED_NAMESPACES: Mapping[str, str] = {
    name: "Bedrock reserves as a built-in tool namespace"
    for name in ("web", "image_gen", "browser", "python")
}


@functools.lru_cache(maxsize=65_536)
def provider_name(tool_id: str) -> str:
    """Return the name a provider sees for a tool.

    Every character outside ``[A-Za-z0-9_-]`` (the ``.`` between toolset and tool included)
    becomes ``_``. A longer name is cut and ends with ``_`` and 8 hex digits of the SHA-256 of
    the full ID, so that long IDs sharing a prefix still get different, stable names.
    """
    if not tool_id:
        raise ProviderNameError("a tool has an empty ID; every tool needs a toolset.tool ID")
    name = _NOT_ALLOWED.sub("_", tool_id)
    if len(name) <= MAX_NAME_LENGTH:
        return name
    digest = hashlib.sha256(tool_id.encode()).hexdigest()[:_HASH_LENGTH]
    return f"{name[: MAX_NAME_LENGTH - _HASH_LENGTH - 1]}_{digest}"


def _collision(provider: str, other: str, tool_id: str, name: str) -> ProviderNameError:
    return ProviderNameError(
        f"{provider}: tools {other!r} and {tool_id!r} would both be sent as {name!r}, so a "
        "call to one could not be told from a call to the other; rename one of them (IDs that "
        "differ only in '.', '_' or characters outside [A-Za-z0-9_-] collide)"
    )


@dataclass(frozen=True)
class NameTable:
    """The provider names of a set of tool IDs, both ways, or the first reason they cannot
    all be sent (an empty ID, or two IDs sharing a name). Independent of the provider, so that
    one table serves every request over the same definitions (see :func:`shared_table`)."""

    names: Mapping[str, str]
    ids: Mapping[str, str]
    #: (earlier tool, later tool, the name both would get) of the first collision.
    collision: tuple[str, str, str] | None = None
    empty_id: bool = False

    @classmethod
    def of(cls, tool_ids: Iterable[str]) -> NameTable:
        ids = list(tool_ids)
        # A request may carry thousands of deferred tools: map them all in C-speed passes,
        # and go tool by tool only to find the first problem, in order.
        if all(ids):
            names = list(map(provider_name, ids))
            by_id = dict(zip(ids, names, strict=True))
            by_name = dict(zip(names, ids, strict=True))
            if len(by_id) == len(by_name):
                return cls(by_id, by_name)
        by_id, by_name = {}, {}
        for tool_id in ids:
            if not tool_id:
                return cls({}, {}, empty_id=True)
            if tool_id in by_id:
                continue
            name = provider_name(tool_id)
            other = by_name.get(name)
            if other is not None:
                return cls({}, {}, collision=(other, tool_id, name))
            by_id[tool_id] = name
            by_name[name] = tool_id
        return cls(by_id, by_name)

    def check(self, provider: str) -> None:
        if self.empty_id:
            provider_name("")  # raises the error every adapter gives for an empty ID
        if self.collision is not None:
            raise _collision(provider, *self.collision)


def _table_of(tools: AdvertisedTools) -> NameTable:
    return NameTable.of(tool.id for tool in tools)


def shared_table(tools: Sequence[ToolDefinition]) -> NameTable | None:
    """The name table of a catalog's advertised tools, computed once for all its requests."""
    return tools.derived(NameTable, _table_of) if isinstance(tools, AdvertisedTools) else None


class NameMap:
    """A one-to-one mapping between the tool IDs of one request and their provider names.

    ``reserved`` maps names the provider keeps for itself to the reason, which the error
    quotes. Building the map is where collisions are found, so an adapter builds it before it
    encodes anything. ``table`` (see :func:`shared_table`) replaces ``tool_ids`` with a table
    shared by other requests; tools added later (historical ones) stay in this map.
    """

    def __init__(
        self,
        provider: str,
        tool_ids: Iterable[str],
        reserved: Mapping[str, str] | None = None,
        *,
        table: NameTable | None = None,
    ) -> None:
        self.provider = provider
        table = table if table is not None else NameTable.of(tool_ids)
        table.check(provider)
        self._shared_names = table.names
        self._shared_ids = table.ids
        self._names: dict[str, str] = {}
        self._ids: dict[str, str] = {}
        for name, reason in (reserved or {}).items():
            self.reject(name, reason)

    def add(self, tool_id: str) -> str:
        """Map a tool (once; adding it again returns the same name) and return its name."""
        known = self._shared_names.get(tool_id) or self._names.get(tool_id)
        if known is not None:
            return known
        name = provider_name(tool_id)
        other = self.tool_id(name)
        if other is not None:
            raise _collision(self.provider, other, tool_id, name)
        self._names[tool_id] = name
        self._ids[name] = tool_id
        return name

    def reject(self, name: str, reason: str, among: Container[str] | None = None) -> None:
        """Fail if a mapped tool (or one of ``among``, if given) is sent as ``name``."""
        tool_id = self.tool_id(name)
        if tool_id is None or (among is not None and tool_id not in among):
            return
        raise ProviderNameError(
            f"{self.provider}: tool {tool_id!r} would be sent as {name!r}, which {reason}; "
            "rename the tool"
        )

    def name(self, tool_id: str) -> str:
        """The provider name of a mapped tool."""
        name = self._shared_names.get(tool_id) or self._names.get(tool_id)
        if name is None:
            raise ProviderNameError(
                f"{self.provider}: tool {tool_id!r} is not part of this request"
            )
        return name

    def tool_id(self, name: str) -> str | None:
        """The tool a provider name stands for, or None if no tool of the request has it."""
        return self._shared_ids.get(name) or self._ids.get(name)

    def __contains__(self, tool_id: object) -> bool:
        return tool_id in self._shared_names or tool_id in self._names

    def __len__(self) -> int:
        return len(self._shared_names) + len(self._names)
