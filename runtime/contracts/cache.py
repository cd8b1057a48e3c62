"""Compiled registry contracts, kept for every planning activity of the process.

Compiling a registry tool (checking its schemas, building its spec) costs far more than using
it, and consecutive planning activities read the same declarations again and again. This cache
keeps each compiled tool under its **wire form**: the declaration exactly as a registry sends
it (``ToolSchema.to_json()`` as compact JSON: schemas, description, tags, consumer contract),
hashed with SHA-256, together with the toolset name it was resolved under. A declaration is
served from the cache only when its wire form is byte for byte the one that was compiled, so a
schema that changed under the same name, the same registration token or the same claimed
fingerprint is a different key and is compiled (and checked) afresh. Only declarations that
compiled are kept: whatever enters the cache passed every check of
:func:`~agentgen.runtime.contracts.compiler.compile`.

A whole toolset can also be recognised at once, by the digest its registry client reports for
the answer it parsed (:attr:`ResolvedToolset.digest`): an unchanged toolset then costs one
lookup instead of hashing each of its tools again. Without a digest, each tool's wire form is
hashed, which costs about as much as serialising it (far less than compiling it).

The cache is bounded (least recently used entries go first) and shared by concurrent
activities and threads: entries are immutable once made, and two callers that compile the same
declaration at the same time both get the first entry stored. Codecs are built lazily (see
:mod:`.lazy_codec`), so a cached tool holds its schemas as JSON text until a value is checked.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from pydantic_core import SchemaSerializer

from agentgen.runtime.contracts import compiler
from agentgen.runtime.contracts.declarations import ToolSchema, ToolsetDeclaration
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.model_client import ToolDefinition
from agentgen.runtime.pacing import Pacer

__all__ = [
    "DEFAULT_MAX_TOOLS",
    "DEFAULT_MAX_TOOLSETS",
    "CompiledTool",
    "CompiledToolset",
    "ContractCache",
    "default_cache",
    "wire_form",
]

#: Compiled tools a cache keeps (about 3 KB each: a catalog of 10,000 tools fits twice).
DEFAULT_MAX_TOOLS = 20_000
#: Toolsets a cache recognises by their registry digest.
DEFAULT_MAX_TOOLSETS = 4_096

# NaN and infinities are written as such (not as null, pydantic's default), so that a
# declaration holding one can never share a wire form with one holding null.
_WIRE = SchemaSerializer(ToolSchema.__pydantic_core_schema__, {"ser_json_inf_nan": "constants"})


def wire_form(declaration: ToolSchema) -> bytes:
    """The declaration as a registry sends it: ``ToolSchema.to_json()`` as compact JSON."""
    data: bytes = _WIRE.to_json(declaration, by_alias=True, exclude_defaults=True)
    return data


class CompiledTool:
    """One tool's compiled contract: its spec and the wire form it was compiled from.

    The wire form is the saved contract an accepted call keeps (see
    :class:`~agentgen.runtime.runs.accepted.RegistryBinding`); ``declaration()`` parses a
    fresh copy for each caller. The tool's definitions (deferred or not) are made once.
    """

    __slots__ = ("_definitions", "spec", "wire")

    def __init__(self, spec: ToolSpec, wire: bytes) -> None:
        self.spec = spec
        self.wire = wire
        self._definitions: tuple[ToolDefinition | None, ToolDefinition | None] = (None, None)

    def declaration(self) -> dict[str, Any]:
        """A fresh copy of the wire declaration (callers may change it freely)."""
        value: dict[str, Any] = json.loads(self.wire)
        return value

    def definition(self, deferred: bool) -> ToolDefinition:
        """The tool as advertised to models (immutable, shared by every activity)."""
        made = self._definitions[deferred]
        if made is None:
            spec = self.spec
            made = ToolDefinition(
                id=spec.id,
                title=spec.title,
                description=spec.description,
                parameters_json=spec.payload.schema_json,
                search=spec.search,
                deferred=deferred,
                tags=spec.tags,
            )
            pair = list(self._definitions)
            pair[deferred] = made
            self._definitions = (pair[0], pair[1])
        return made


class CompiledToolset:
    """The compiled tools of one resolved toolset, in declaration order."""

    __slots__ = ("_by_name", "name", "tools")

    def __init__(self, name: str, tools: Sequence[CompiledTool]) -> None:
        self.name = name
        self.tools = tuple(tools)
        self._by_name: dict[str, CompiledTool] | None = None

    def partner(self, tool: CompiledTool) -> CompiledTool | None:
        """The tool's fixed pagination partner in this toolset (continuation or source)."""
        paging = tool.spec.bounds.paging if tool.spec.bounds else None
        other = paging.continue_tool or paging.source_tool if paging else None
        if not other:
            return None
        by_name = self._by_name
        if by_name is None:
            by_name = self._by_name = {entry.spec.id: entry for entry in self.tools}
        return by_name.get(other)


K = TypeVar("K")
V = TypeVar("V")


class _LRU(Generic[K, V]):
    """A bounded mapping; callers hold the cache's lock."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a contract cache must hold at least one entry, got {size}")
        self.size = size
        self.entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self.entries.get(key)
        if value is not None:
            self.entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> V:
        """Store ``value`` unless the key is already there; return what is stored."""
        existing = self.entries.get(key)
        if existing is not None:
            return existing
        self.entries[key] = value
        if len(self.entries) > self.size:
            self.entries.popitem(last=False)
        return value


class ContractCache:
    """Compiled registry tools by toolset and wire form, bounded, thread-safe."""

    def __init__(
        self, max_tools: int = DEFAULT_MAX_TOOLS, max_toolsets: int = DEFAULT_MAX_TOOLSETS
    ) -> None:
        self._lock = threading.Lock()
        self._tools: _LRU[tuple[str, bytes], CompiledTool] = _LRU(max_tools)
        self._toolsets: _LRU[tuple[str, str], CompiledToolset] = _LRU(max_toolsets)
        #: Declarations compiled because no entry matched (also counts concurrent repeats).
        self.compiles = 0
        #: Declarations served from the cache.
        self.hits = 0

    def __len__(self) -> int:
        return len(self._tools.entries)

    def clear(self) -> None:
        with self._lock:
            self._tools.entries.clear()
            self._toolsets.entries.clear()

    def tool(self, declaration: ToolSchema, *, toolset: str) -> CompiledTool:
        """The compiled tool for ``declaration`` resolved under toolset ``toolset``.

        Raises :class:`~agentgen.runtime.contracts.declarations.ContractError` (nothing is
        stored) when the declaration does not compile.
        """
        wire = wire_form(declaration)
        key = (toolset, hashlib.sha256(wire).digest())
        with self._lock:
            found = self._tools.get(key)
            if found is not None:
                self.hits += 1
                return found
        entry = CompiledTool(compiler.compile(declaration, toolset=toolset), wire)
        with self._lock:
            self.compiles += 1
            return self._tools.put(key, entry)

    def restore(self, declaration: Mapping[str, Any], *, toolset: str) -> CompiledTool:
        """The compiled tool for a saved wire declaration (a checkpoint's contract)."""
        return self.tool(ToolSchema.model_validate(declaration), toolset=toolset)

    async def toolset(
        self,
        declaration: ToolsetDeclaration,
        *,
        name: str,
        digest: str | None = None,
        pacer: Pacer | None = None,
    ) -> CompiledToolset:
        """Every tool of a resolved toolset, compiled under registration name ``name``.

        ``digest`` identifies the registry answer ``declaration`` was parsed from (see
        :attr:`ResolvedToolset.digest`); with it an unchanged toolset is found in one lookup.
        ``pacer`` gives the event loop a turn between tools.
        """
        key = (name, digest) if digest else None
        if key is not None:
            with self._lock:
                found = self._toolsets.get(key)
            if found is not None:
                return found
        tools = []
        for tool in declaration.tools:
            tools.append(self.tool(tool, toolset=name))
            if pacer is not None:
                await pacer.pause()
        compiled = CompiledToolset(name, tools)
        if key is None:
            return compiled
        with self._lock:
            return self._toolsets.put(key, compiled)


_default = ContractCache()


def default_cache() -> ContractCache:
    """The process-wide cache planning catalogs and checkpoint restores use."""
    return _default
