"""Compiled registry contracts, kept for every planning activity of the process.

Compiling a registry tool (checking its schemas, building its spec) costs far more than using
it, and consecutive planning activities read the same declarations again and again. This cache
keeps each compiled tool under its **wire form**: the declaration exactly as a registry sends
it (``ToolSchema.to_json()`` as compact JSON: schemas, description, tags, consumer contract),
hashed with SHA-256, together with the toolset name it was resolved under. A declaration is
served from the cache only when its wire form is byte for byte the one that was compiled, so a
schema that changed under the same name, the same registration token or the same claimed
fingerprint is a different key and is compiled (and checked) afresh. Only declarations that
compiled are kept as tools: whatever the cache serves passed every check of
:func:`~agentgen.runtime.contracts.compiler.compile`. A declaration that was refused is
remembered too, by its refusal's message only, so that a registry serving the same bad
declaration to every planning activity (a 1 MB schema, say) costs one serialisation per
activity, not the checks again: compiling is a function of the wire form and the toolset name,
so the same key is always refused with the same message.

A whole toolset can also be recognised at once, by the digest its registry client reports for
the answer it parsed (:attr:`ResolvedToolset.digest`): an unchanged toolset then costs one
lookup instead of hashing each of its tools again. Without a digest, each tool's wire form is
hashed, which costs about as much as serialising it (far less than compiling it).

The cache is bounded (least recently used entries go first) and shared by concurrent
activities and threads: entries are immutable once made, and two callers that compile the same
declaration at the same time both get the first entry stored. A whole answer (a digest) that
activities of one event loop read at the same time is built by the first of them while the
others wait: runs that start together do not each parse and hash every tool of it (100 runs
reading a new 2,000-tool answer at once took over two minutes, one after the other). Codecs
are built lazily (see :mod:`.lazy_codec`), so a cached tool holds its schemas as JSON text
until a value is checked.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import PydanticSerializationError, SchemaSerializer

from agentgen.runtime.contracts import compiler
from agentgen.runtime.contracts.declarations import ContractError, ToolSchema, ToolsetDeclaration
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.contracts.toolset_text import ToolsetText
from agentgen.runtime.lru import LRU
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
#: Refused declarations a cache remembers (a key and a message each).
DEFAULT_MAX_REFUSALS = 1_024

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
    fresh copy for each caller. Only accepted calls need it, so it is kept compressed, with
    the spec's schema texts (which it repeats) as the compression dictionary: a sixth of its
    size, where it would otherwise be most of a cached tool's memory.
    """

    __slots__ = ("_packed", "advertised", "spec")

    def __init__(self, spec: ToolSpec, wire: bytes) -> None:
        self.spec = spec
        packer = zlib.compressobj(6, zdict=self._dictionary())
        self._packed = packer.compress(wire) + packer.flush()
        #: The tool as planning catalogs advertise it, made once by the first catalog that
        #: needs it (contracts do not know the model seam's types).
        self.advertised: Any = None

    def _dictionary(self) -> bytes:
        return (self.spec.result.schema_json + self.spec.payload.schema_json).encode()

    @property
    def wire(self) -> bytes:
        """The wire form, as compact JSON."""
        unpacker = zlib.decompressobj(zdict=self._dictionary())
        return unpacker.decompress(self._packed) + unpacker.flush()

    def declaration(self) -> dict[str, Any]:
        """A fresh copy of the wire declaration (callers may change it freely)."""
        value: dict[str, Any] = json.loads(self.wire)
        return value


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


class ContractCache:
    """Compiled registry tools by toolset and wire form, bounded, thread-safe.

    ``max_tools`` bounds the tools kept by wire form, ``max_toolsets`` the toolsets kept
    whole (by digest, or by their tools; a toolset kept whole keeps its tools with it) and
    ``max_refusals`` the refused declarations remembered by wire form.
    """

    def __init__(
        self,
        max_tools: int = DEFAULT_MAX_TOOLS,
        max_toolsets: int = DEFAULT_MAX_TOOLSETS,
        max_refusals: int = DEFAULT_MAX_REFUSALS,
    ) -> None:
        self._lock = threading.Lock()
        self._tools: LRU[bytes, CompiledTool] = LRU(max_tools)
        self._refused: LRU[bytes, str] = LRU(max_refusals)
        self._toolsets: LRU[tuple[str, str], CompiledToolset] = LRU(max_toolsets)
        # The same toolset again, recognised by its (cached) tools when no digest says so.
        self._again: LRU[tuple[str, tuple[CompiledTool, ...]], CompiledToolset] = LRU(max_toolsets)
        #: Toolsets being built by digest, each by the first activity that asked (the others
        #: of its event loop wait for it): None when that one failed or was cancelled.
        self._building: dict[tuple[str, str], asyncio.Future[CompiledToolset | None]] = {}
        #: Declarations compiled because no entry matched (also counts concurrent repeats).
        self.compiles = 0
        #: Declarations served from the cache (compiled, or refused again).
        self.hits = 0

    def __len__(self) -> int:
        return len(self._tools.entries)

    def clear(self) -> None:
        with self._lock:
            self._tools.entries.clear()
            self._refused.entries.clear()
            self._toolsets.entries.clear()
            self._again.entries.clear()

    def tool(self, declaration: ToolSchema, *, toolset: str, fresh: bool = False) -> CompiledTool:
        """The compiled tool for ``declaration`` resolved under toolset ``toolset`` (``fresh``:
        see :func:`~agentgen.runtime.contracts.compiler.compile`).

        Raises :class:`~agentgen.runtime.contracts.declarations.ContractError` when the
        declaration does not compile (then, or when it was refused before).
        """
        try:
            wire = wire_form(declaration)
        except PydanticSerializationError as exc:  # values that are not JSON at all
            raise ContractError(
                f"tool {declaration.name!r} declaration is not JSON: {exc}"
            ) from None
        # One digest of the toolset name and the wire form: the name cannot run into the
        # declaration (a NUL never occurs in JSON text nor in a valid registration name).
        key = hashlib.sha256(b"%s\0%s" % (toolset.encode(), wire)).digest()
        with self._lock:
            found = self._tools.get(key)
            refusal = None if found is not None else self._refused.get(key)
            if found is not None or refusal is not None:
                self.hits += 1
        if found is not None:
            return found
        if refusal is not None:
            raise ContractError(refusal)
        try:
            spec = (
                compiler.compile(declaration, toolset=toolset, fresh=True)
                if fresh
                else compiler.compile(declaration, toolset=toolset)
            )
        except ContractError as exc:
            with self._lock:
                self.compiles += 1
                self._refused.put(key, str(exc))
            raise
        entry = CompiledTool(spec, wire)
        with self._lock:
            self.compiles += 1
            return self._tools.put(key, entry)

    def restore(self, declaration: Mapping[str, Any], *, toolset: str) -> CompiledTool:
        """The compiled tool for a saved wire declaration (a checkpoint's contract)."""
        return self.tool(ToolSchema.model_validate(declaration), toolset=toolset)

    async def toolset(
        self,
        declaration: ToolsetDeclaration | ToolsetText,
        *,
        name: str,
        digest: str | None = None,
        pacer: Pacer | None = None,
    ) -> CompiledToolset:
        """Every tool of a resolved toolset, compiled under registration name ``name``.

        ``digest`` identifies the registry answer ``declaration`` was parsed from (see
        :attr:`ResolvedToolset.digest`); with it an unchanged toolset is found in one lookup.
        A declaration kept as text is parsed only when it is not found so, and the parsed form
        is dropped once its tools are compiled. ``pacer`` gives the event loop a turn between
        tools. Reading the same declarations again gives the same object.
        """
        if not digest:
            return await self._build(declaration, name=name, key=None, pacer=pacer)
        key = (name, digest)
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                found = self._toolsets.get(key)
                building = self._building.get(key) if found is None else None
                if found is None and (building is None or building.get_loop() is not loop):
                    building = None
                    mine: asyncio.Future[CompiledToolset | None] = loop.create_future()
                    self._building[key] = mine
            if found is not None:
                return found
            if building is None:
                break
            # Another activity of this loop is building the same answer: wait for it (its
            # cancellation is not this one's), or build it here if it did not finish.
            built = await asyncio.shield(building)
            if built is not None:
                return built
        try:
            compiled = await self._build(declaration, name=name, key=key, pacer=pacer)
        except BaseException:
            mine.set_result(None)
            raise
        finally:
            with self._lock:
                if self._building.get(key) is mine:
                    del self._building[key]
        mine.set_result(compiled)
        return compiled

    async def _build(
        self,
        declaration: ToolsetDeclaration | ToolsetText,
        *,
        name: str,
        key: tuple[str, str] | None,
        pacer: Pacer | None,
    ) -> CompiledToolset:
        # A declaration kept as text is parsed here, into models no one else holds.
        fresh = isinstance(declaration, ToolsetText)
        if isinstance(declaration, ToolsetText):
            declaration = declaration.declaration()
        tools = []
        for tool in declaration.tools:
            tools.append(self.tool(tool, toolset=name, fresh=fresh))
            if pacer is not None:
                await pacer.pause()
        # The same tools as an earlier read give the same toolset object, so that what is
        # derived from a whole catalog (see AdvertisedTools) can be kept across activities.
        again = (name, tuple(tools))
        with self._lock:
            compiled = self._again.put(again, CompiledToolset(name, tools))
            return compiled if key is None else self._toolsets.put(key, compiled)


_default = ContractCache()


def default_cache() -> ContractCache:
    """The process-wide cache planning catalogs and checkpoint restores use."""
    return _default
