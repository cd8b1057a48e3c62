"""The generation model: every fact a template prints, computed before rendering.

Frozen dataclasses built from a validated design by :mod:`agentgen.codegen.build`. Templates
only loop over these and format them; anything that needs a decision (names, IDs, schemas,
search counts, fingerprints, import paths) is decided here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from agentgen.codegen.pytypes import ClassSource
from agentgen.runtime.contracts.specs import ConfirmationSpec, PagingSpec, ServerDataSpec
from agentgen.runtime.search.document import SearchDocument

TypeKind = Literal["model", "empty", "null", "schema"]
ToolsetKind = Literal["local", "mcp", "agent"]


def sort_imports(lines: Iterable[str]) -> tuple[str, ...]:
    """Relative imports in isort's order: furthest package first, then by module path."""

    def key(line: str) -> tuple[int, str]:
        module = line.split()[1]
        dots = len(module) - len(module.lstrip("."))
        return -dots, module.lstrip(".")

    return tuple(sorted(lines, key=key))


def _screaming(name: str) -> bool:
    """SCREAMING_CASE as ruff tells it: more than one byte of UTF-8, no lowercase letter and at
    least one uppercase one (``E`` is CamelCase, ``_`` neither)."""
    return (
        len(name.encode()) > 1
        and not any(c.islower() for c in name)
        and any(c.isupper() for c in name)
    )


def dunder_all_key(name: str) -> tuple[int, tuple[tuple[int, int], ...]]:
    """The order of an ``__all__`` entry in an isort-style sort (ruff's RUF022):
    SCREAMING_CASE names, then CamelCase, then the others; natural order within each group
    (``Item2`` before ``Item10``), characters compared case-sensitively."""
    group = 0 if _screaming(name) else 1 if name[:1].isupper() else 2
    chunks: list[tuple[int, int]] = []
    for chunk in re.split(r"(\d+)", name):
        if chunk.isdigit():
            chunks.append((ord("0"), int(chunk)))
        else:
            chunks.extend((ord(c), -1) for c in chunk)
    return group, tuple(chunks)


@dataclass(frozen=True)
class TypeRef:
    """A payload or result type. ``model``: a class of the toolset's ``types`` module;
    ``empty``: no Args (the runtime's empty payload); ``null``: no Return; ``schema``: a JSON
    Schema without a class (external MCP tools)."""

    kind: TypeKind
    class_name: str | None
    schema_json: str
    #: The annotation generated code uses for values of this type.
    annotation: str


@dataclass(frozen=True)
class ToolModel:
    name: str
    id: str
    #: Python constant holding the tool ID (``LOOKUP``).
    const: str
    #: Executor method name (``lookup``).
    method: str
    title: str
    description: str
    tags: tuple[str, ...]
    payload: TypeRef
    result: TypeRef
    search: SearchDocument
    kind: Literal["service", "agent"]
    agent_id: str | None
    confirmation: ConfirmationSpec | None
    bounded: bool
    paging: PagingSpec | None
    server_data: tuple[ServerDataSpec, ...]
    required_labels: tuple[str, ...]
    #: The name ``tools/call`` sends for a tool of an external MCP toolset: the design's name
    #: unless ``MCPName`` gives the server's own.
    server_name: str = ""


@dataclass(frozen=True)
class ToolsetModel:
    name: str
    service: str
    registration_name: str
    #: Package path below the output root, e.g. ``("assistant", "toolsets", "records")``.
    package: tuple[str, ...]
    description: str | None
    tags: tuple[str, ...]
    tools: tuple[ToolModel, ...]
    kind: ToolsetKind
    classes: tuple[ClassSource, ...]
    #: Modules ``types.py`` imports under a private alias (``import uuid as _uuid``).
    imports: tuple[str, ...]
    pydantic_names: tuple[str, ...]
    typing_names: tuple[str, ...]
    #: ``import pydantic as _pydantic`` too: a pydantic name is written ``_pydantic.X`` (a
    #: class took ``X``, or a field of the class using it is named ``X``).
    pydantic_module: bool
    #: Classes to rebuild once all are defined (they refer to a later class).
    rebuild: tuple[str, ...]
    fingerprint: str
    #: Class prefix for generated names (``Records`` → ``RecordsExecutor``).
    prefix: str
    mcp_service: str | None = None
    mcp_toolset: str | None = None
    #: For agent exports: the agent that runs these tools.
    agent_id: str | None = None
    #: Registries the toolset's contract is published to (``PublishTo``), by name.
    publish_to: tuple[str, ...] = ()
    #: The name ``executor.py`` imports the ``types`` module under (``_types`` when a tool's
    #: method is named ``types``).
    types_module: str = "types"

    @property
    def exported_names(self) -> tuple[str, ...]:
        """The class names of ``types.py`` in the order of ``__all__`` (ruff's RUF022)."""
        return tuple(sorted((c.name for c in self.classes), key=dunder_all_key))

    @property
    def needs_executor(self) -> bool:
        return self.kind in ("local", "mcp")

    @property
    def uses_empty_payload(self) -> bool:
        return any(t.payload.kind == "empty" for t in self.tools)

    @property
    def spec_imports(self) -> tuple[str, ...]:
        """Names the specs module imports from ``agentgen.runtime``."""
        names = {"SearchDocument", "SpecIndex", "ToolSpec"}
        if self.kind == "mcp":
            names.add("MCPDeclaration")
        constructors = {
            "model": "model_type", "empty": "empty_payload", "null": "null_result",
            "schema": "schema_type",
        }  # fmt: skip
        for tool in self.tools:
            names.add(constructors[tool.payload.kind])
            names.add(constructors[tool.result.kind])
            if tool.confirmation is not None:
                names.add("ConfirmationSpec")
            if tool.bounded:
                names.add("BoundsSpec")
            if tool.paging is not None:
                names.add("PagingSpec")
            if tool.server_data:
                names.add("ServerDataSpec")
        return tuple(sorted(names))


@dataclass(frozen=True)
class UsedToolset:
    """A toolset as one agent consumes it."""

    toolset: ToolsetModel
    tools: tuple[ToolModel, ...]
    #: Relative import of the toolset package from the agent's modules (``...toolsets.records``).
    import_path: str
    #: Module alias prefix in the agent's modules (``records``).
    alias: str
    #: Config field holding the executor or MCP caller, if the toolset needs one.
    config_field: str | None
    #: True when the agent uses only some of the toolset's tools.
    subset: bool
    #: The executor protocol the agent's config defines for a subset of a local toolset (one
    #: method per used tool); None when the config takes the toolset's own protocol.
    protocol: str | None = None

    @property
    def executor_type(self) -> str:
        """The type of the config field holding this toolset's executor."""
        return self.protocol or f"{self.toolset.prefix}Executor"

    @property
    def types_alias(self) -> str:
        """The name the agent's config imports the toolset's ``types`` module under:
        ``<alias>_types``, or ``_<alias>_types`` when a used tool's method takes that name (a
        method would shadow the module in its protocol's annotations)."""
        name = f"{self.alias}_types"
        return f"_{name}" if any(t.method == name for t in self.tools) else name

    def annotation(self, ref: TypeRef) -> str:
        """How the agent's config module writes a tool type."""
        if ref.kind == "model":
            return f"{self.types_alias}.{ref.class_name}"
        return ref.annotation


@dataclass(frozen=True)
class RegistryRead:
    """One registry source an agent reads when a planning activity builds its catalog."""

    registry: str
    #: The toolset's name in the registry; None for a whole registry.
    toolset: str | None
    version: str
    deferred: bool


@dataclass(frozen=True)
class TagClauseModel:
    allowed_any: tuple[str, ...]
    denied_any: tuple[str, ...]


@dataclass(frozen=True)
class PolicyModel:
    max_tool_calls: int | None = None
    max_consecutive_failed_tool_calls: int | None = None
    tag_clauses: tuple[TagClauseModel, ...] = ()
    #: Seconds (``ModelTimeout``); None leaves model calls to the client's own timeout.
    model_timeout: float | None = None


@dataclass(frozen=True)
class AgentModel:
    name: str
    id: str
    service: str
    description: str
    package: tuple[str, ...]
    prefix: str
    uses: tuple[UsedToolset, ...]
    deferred_ids: tuple[str, ...]
    registry_reads: tuple[RegistryRead, ...]
    policy: PolicyModel
    required_labels: tuple[str, ...]
    agent_executors: tuple[str, ...]
    tool_schemas_json: str | None
    #: ``<Agent>AgentConfig`` and ``register_<agent>_agent`` (no doubled suffix: see
    #: :func:`agentgen.codegen.builders.names.agent_names`).
    config_class: str
    register_function: str

    @property
    def registries(self) -> tuple[str, ...]:
        """The registries the agent reads, sorted, each once."""
        return tuple(sorted({read.registry for read in self.registry_reads}))

    @property
    def uses_mcp(self) -> bool:
        return any(u.toolset.kind == "mcp" for u in self.uses)

    @property
    def specs_imports(self) -> tuple[str, ...]:
        return sort_imports(
            f"from {u.import_path} import specs as {u.alias}_specs" for u in self.uses
        )

    @property
    def config_imports(self) -> tuple[str, ...]:
        lines = [
            f"from {u.import_path}.executor import {u.toolset.prefix}Executor"
            for u in self.uses
            if u.toolset.kind == "local" and u.protocol is None
        ] + [
            f"from {u.import_path} import types as {u.types_alias}"
            for u in self.uses
            if u.protocol is not None
            and any(r.kind == "model" for t in u.tools for r in (t.payload, t.result))
        ]
        return sort_imports(lines)

    @property
    def protocols(self) -> tuple[UsedToolset, ...]:
        """The uses whose executor protocol the agent's config defines (subsets)."""
        return tuple(u for u in self.uses if u.protocol is not None)

    @property
    def config_runtime_imports(self) -> tuple[str, ...]:
        """Names the agent's config imports from ``agentgen.runtime``."""
        names = {"Planner"}
        if self.uses_mcp:
            names.add("MCPCaller")
        for used in self.protocols:
            names.add("ToolContext")
            if any(t.payload.kind == "empty" for t in used.tools):
                names.add("EmptyPayload")
        return tuple(sorted(names))

    @property
    def register_imports(self) -> tuple[str, ...]:
        lines = [
            f"from {u.import_path} import executor as {u.alias}_executor"
            for u in self.uses
            if u.toolset.kind == "local"
        ] + [
            f"from {u.import_path} import specs as {u.alias}_specs"
            for u in self.uses
            if u.toolset.kind == "mcp"
        ]
        return sort_imports(
            [
                *lines,
                "from .agent import AGENT_ID, definition"
                if any(u.config_field for u in self.uses)
                else "from .agent import definition",
                f"from .config import {self.config_class}",
            ]
        )


@dataclass(frozen=True)
class ServiceModel:
    name: str
    toolsets: tuple[ToolsetModel, ...]
    agents: tuple[AgentModel, ...]
    #: The service's ``Description``: the docstring of its package.
    description: str | None = None


@dataclass(frozen=True)
class RetryModel:
    max_retries: int
    backoff_base: float
    backoff_max: float


@dataclass(frozen=True)
class RegistryModel:
    """A declared registry's settings (durations in seconds; None: not set)."""

    name: str
    url: str
    api_version: str
    description: str | None
    timeout: float | None
    sync_interval: float | None
    cache_ttl: float | None
    retry: RetryModel | None


@dataclass(frozen=True)
class GenerationModel:
    design_name: str
    services: tuple[ServiceModel, ...]
    warnings: tuple[str, ...] = field(default=())
    registries: tuple[RegistryModel, ...] = field(default=())
