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
from collections.abc import Container, Iterable, Mapping

from agentgen.runtime.adapters.errors import ProviderNameError

__all__ = [
    "BEDROCK_RESERVED_NAMESPACES",
    "MAX_NAME_LENGTH",
    "NameMap",
    "provider_name",
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


class NameMap:
    """A one-to-one mapping between the tool IDs of one request and their provider names.

    ``reserved`` maps names the provider keeps for itself to the reason, which the error
    quotes. Building the map is where collisions are found, so an adapter builds it before it
    encodes anything.
    """

    def __init__(
        self,
        provider: str,
        tool_ids: Iterable[str],
        reserved: Mapping[str, str] | None = None,
    ) -> None:
        self.provider = provider
        ids = list(tool_ids)
        # A request may carry thousands of deferred tools: map them all in C-speed passes,
        # and go tool by tool only to name a collision (or an empty ID).
        names = list(map(provider_name, ids)) if all(ids) else []
        self._names: dict[str, str] = dict(zip(ids, names, strict=True)) if names else {}
        self._ids: dict[str, str] = dict(zip(names, ids, strict=True)) if names else {}
        if len(self._ids) != len(self._names) or (ids and not names):
            self._names, self._ids = {}, {}
            for tool_id in ids:
                self.add(tool_id)
        for name, reason in (reserved or {}).items():
            self.reject(name, reason)

    def add(self, tool_id: str) -> str:
        """Map a tool (once; adding it again returns the same name) and return its name."""
        known = self._names.get(tool_id)
        if known is not None:
            return known
        name = provider_name(tool_id)
        other = self._ids.get(name)
        if other is not None:
            raise ProviderNameError(
                f"{self.provider}: tools {other!r} and {tool_id!r} would both be sent as "
                f"{name!r}, so a call to one could not be told from a call to the other; rename "
                "one of them (IDs that differ only in '.', '_' or characters outside "
                "[A-Za-z0-9_-] collide)"
            )
        self._names[tool_id] = name
        self._ids[name] = tool_id
        return name

    def reject(self, name: str, reason: str, among: Container[str] | None = None) -> None:
        """Fail if a mapped tool (or one of ``among``, if given) is sent as ``name``."""
        tool_id = self._ids.get(name)
        if tool_id is None or (among is not None and tool_id not in among):
            return
        raise ProviderNameError(
            f"{self.provider}: tool {tool_id!r} would be sent as {name!r}, which {reason}; "
            "rename the tool"
        )

    def name(self, tool_id: str) -> str:
        """The provider name of a mapped tool."""
        try:
            return self._names[tool_id]
        except KeyError:
            raise ProviderNameError(
                f"{self.provider}: tool {tool_id!r} is not part of this request"
            ) from None

    def tool_id(self, name: str) -> str | None:
        """The tool a provider name stands for, or None if no tool of the request has it."""
        return self._ids.get(name)

    def __contains__(self, tool_id: object) -> bool:
        return tool_id in self._names

    def __len__(self) -> int:
        return len(self._names)
