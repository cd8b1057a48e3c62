"""The expression tree a design evaluates to.

Expressions are plain mutable dataclasses while the DSL runs (bodies fill them in), then the
validator reads them whole. Identity matters (a ``Use`` refers to *the* toolset it consumes),
so expressions compare by identity; :func:`agentgen.dsl.dump.dump` gives a structural view for
comparisons that ignore locations.

Every expression records ``loc``, the span of the DSL call that created it, and ``parent``,
the expression whose body it was declared in, so errors can say where (file:line) and in what
(``service "s" › agent "a" › Use(records)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from agentgen.dsl.location import SourceLoc
from agentgen.dsl.names import q
from agentgen.dsl.scope import current_evaluation, enter_with_body, exit_with_body


@dataclass(eq=False)
class Expr:
    #: The DSL function that creates this kind of expression (for messages).
    func: ClassVar[str] = ""

    loc: SourceLoc
    parent: Expr | None = field(default=None, repr=False)
    #: Set once a body ran for this expression (callable or ``with`` block).
    body_loc: SourceLoc | None = field(default=None, repr=False)
    #: The body given was rejected (reported); rules about an empty body do not apply.
    body_rejected: bool = field(default=False, repr=False)
    #: The settings of this expression whose call was refused (reported), by DSL function
    #: (``"Args"``, ``"URL"``, ``"Cursor"``...): rules about a missing one do not apply, so one
    #: mistake is not reported again as a setting left out.
    refused: set[str] = field(default_factory=set, repr=False)
    #: Where each single-value setting of this expression (``URL``, ``MaxToolCalls``,
    #: ``Title``, ``Args``, ``Cursor``..., by DSL function) was first given, valid or not
    #: (:meth:`Call.repeat_of`): a second one is a repeat even when the first was refused,
    #: reported in the same run.
    given_at: dict[str, SourceLoc] = field(default_factory=dict, repr=False)
    #: The evaluation (:attr:`RootExpr.evaluation`) that made the expression: a module kept
    #: imported from another one hands a design expressions of another tree.
    evaluation: int = field(default_factory=current_evaluation, repr=False)

    def eval_name(self) -> str:
        raise NotImplementedError

    def where(self) -> str:
        """The path from the outermost declaration down to this expression."""
        names: list[str] = []
        node: Expr | None = self
        while node is not None:
            names.append(node.eval_name())
            node = node.parent
        return " › ".join(reversed(names))

    # Scope protocol: ``with Agent(...):`` runs the indented block as the body. The scope
    # stack does the bookkeeping; these hooks just forward to it.
    def __enter__(self) -> Any:
        enter_with_body(self)
        return self

    def __exit__(self, *exc: object) -> None:
        exit_with_body(self)


# --------------------------------------------------------------------------- registries


@dataclass(eq=False)
class RetryExpr:
    loc: SourceLoc
    max_retries: int
    backoff_base: float
    backoff_max: float


@dataclass(eq=False)
class RegistryExpr(Expr):
    func: ClassVar[str] = "Registry"

    name: str = ""
    description: str | None = None
    url: str | None = None
    url_loc: SourceLoc | None = None
    api_version: str | None = None
    timeout: float | None = None
    sync_interval: float | None = None
    cache_ttl: float | None = None
    retry: RetryExpr | None = None

    def eval_name(self) -> str:
        return f"registry {q(self.name)}"


# --------------------------------------------------------------------------- toolsets and tools


@dataclass(frozen=True)
class LocalSource:
    """Tools declared in the design and executed by the application."""

    kind: Literal["local"] = "local"


@dataclass(frozen=True)
class ExternalMCPSource:
    """Tools served by an external MCP server, their schemas declared inline in the design."""

    service: str
    toolset: str
    kind: Literal["mcp"] = "mcp"


@dataclass(frozen=True, eq=False)
class RegistrySource:
    """A toolset published to a registry; its tools are resolved at run time."""

    registry: RegistryExpr
    toolset: str
    loc: SourceLoc
    kind: Literal["registry"] = "registry"


ToolsetSource = LocalSource | ExternalMCPSource | RegistrySource


@dataclass(eq=False)
class TypeExpr:
    """The payload or result type of a tool: a pydantic model class, or a JSON Schema dict
    (external MCP tools only)."""

    loc: SourceLoc
    value: Any


@dataclass(eq=False)
class ConfirmationExpr(Expr):
    func: ClassVar[str] = "Confirmation"

    title: str | None = None
    prompt_template: str | None = None
    prompt_loc: SourceLoc | None = None
    denied_result_template: str | None = None
    denied_result_loc: SourceLoc | None = None

    def eval_name(self) -> str:
        return "Confirmation"


@dataclass(eq=False)
class BoundsExpr(Expr):
    func: ClassVar[str] = "BoundedResult"

    cursor: str | None = None
    cursor_loc: SourceLoc | None = None
    next_cursor: str | None = None
    next_cursor_loc: SourceLoc | None = None
    continue_with: str | None = None
    continue_loc: SourceLoc | None = None

    def eval_name(self) -> str:
        return "BoundedResult"

    @property
    def paging(self) -> bool:
        return self.cursor is not None or self.next_cursor is not None


ServerDataAudience = Literal["timeline", "internal", "evidence"]


@dataclass(eq=False)
class ServerDataExpr(Expr):
    func: ClassVar[str] = "ServerData"

    kind: str = ""
    schema: TypeExpr | None = None
    description: str | None = None
    audience: ServerDataAudience = "timeline"

    def eval_name(self) -> str:
        return f"ServerData({q(self.kind)})"


@dataclass(eq=False)
class ToolExpr(Expr):
    func: ClassVar[str] = "Tool"

    name: str = ""
    description: str | None = None
    title: str | None = None
    tags: list[str] = field(default_factory=list)
    args: TypeExpr | None = None
    result: TypeExpr | None = None
    confirmation: ConfirmationExpr | None = None
    bounds: BoundsExpr | None = None
    server_data: list[ServerDataExpr] = field(default_factory=list)
    required_labels: list[str] = field(default_factory=list)
    #: The tool's name on its external MCP server when it differs from ``name``
    #: (``MCPName(...)``), and where the design set it.
    mcp_name: str | None = None
    mcp_name_loc: SourceLoc | None = None

    @property
    def server_name(self) -> str:
        """The name ``tools/call`` sends for a tool of an external MCP toolset."""
        return self.mcp_name if self.mcp_name is not None else self.name

    def eval_name(self) -> str:
        return f"tool {q(self.name)}"


ToolsetOwner = Literal["design", "agent-use", "agent-export", "service-export"]


@dataclass(eq=False)
class ToolsetExpr(Expr):
    """A defining toolset: declared by ``Toolset(...)`` at the top level, or inline by
    ``Use("name", body)`` / ``Export("name", body)``."""

    func: ClassVar[str] = "Toolset"

    name: str = ""
    description: str | None = None
    tags: list[str] = field(default_factory=list)
    tools: list[ToolExpr] = field(default_factory=list)
    source: ToolsetSource = field(default_factory=LocalSource)
    owner: ToolsetOwner = "design"
    publish_to: list[tuple[RegistryExpr, SourceLoc]] = field(default_factory=list)
    #: Tools whose declaration was rejected (already reported); they still count as declared.
    rejected_tools: int = field(default=0, repr=False)
    #: The names of those tools (when a string): a reference to one (``Tool("Lookup")`` in a
    #: Use, ``Deferred``, ``ContinueWith``) is no unknown tool, the name's own error says why.
    rejected_names: set[str] = field(default_factory=set, repr=False)
    #: Those tools' declarations: their bodies ran, so their tags are what the design says.
    #: Policy checks read them beside the tools that are there, so that a tag only a refused
    #: tool carries is not reported as carried by none, nor its policy as hiding every tool.
    rejected_decls: list[ToolExpr] = field(default_factory=list, repr=False)

    def eval_name(self) -> str:
        return f"toolset {q(self.name)}"

    @property
    def is_registry(self) -> bool:
        return isinstance(self.source, RegistrySource)

    def tool(self, name: str) -> ToolExpr | None:
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None

    def tool_tags(self, tool: ToolExpr) -> tuple[str, ...]:
        """The tags run policies see on ``tool``: the toolset's tags, then the tool's own (each
        once). Generated specs carry this union, so the runtime filters on one list."""
        return tuple(dict.fromkeys([*self.tags, *tool.tags]))


# --------------------------------------------------------------------------- consumption


@dataclass(eq=False)
class DeferredExpr:
    """One ``Deferred(...)`` call: no names means the whole source."""

    loc: SourceLoc
    names: tuple[str, ...]


@dataclass(eq=False)
class VersionExpr:
    loc: SourceLoc
    version: str


@dataclass(eq=False)
class ToolRefExpr:
    """``Tool("name")`` inside the ``Use`` of an existing toolset: a subset by local name."""

    loc: SourceLoc
    name: str


@dataclass(eq=False)
class UseExpr(Expr):
    """An agent consuming a toolset (defined elsewhere or inline) or a whole registry."""

    func: ClassVar[str] = "Use"

    target: ToolsetExpr | RegistryExpr | None = None
    #: True when ``Use("name", body)`` defined ``target`` in place.
    defines: bool = False
    deferred: list[DeferredExpr] = field(default_factory=list)
    version: VersionExpr | None = None
    subset: list[ToolRefExpr] = field(default_factory=list)
    #: Set by finalize: the tools this consumer uses (declaration order) and the local names
    #: of those it defers. Empty for registry sources, whose tools are resolved at run time.
    resolved_tools: list[ToolExpr] = field(default_factory=list, repr=False)
    resolved_deferred: list[str] = field(default_factory=list, repr=False)

    def eval_name(self) -> str:
        if isinstance(self.target, RegistryExpr):
            return f"Use(registry {q(self.target.name)})"
        if isinstance(self.target, ToolsetExpr):
            return f"Use({self.target.name})"
        return "Use(?)"

    @property
    def defers_all(self) -> bool:
        return any(not d.names for d in self.deferred)

    @property
    def deferred_names(self) -> list[tuple[str, SourceLoc]]:
        return [(name, d.loc) for d in self.deferred for name in d.names]

    @property
    def agent(self) -> AgentExpr:
        assert isinstance(self.parent, AgentExpr)
        return self.parent


@dataclass(eq=False)
class ExportExpr(Expr):
    """An agent exporting a toolset (its tools run the agent), or a service exporting one."""

    func: ClassVar[str] = "Export"

    toolset: ToolsetExpr | None = None
    defines: bool = False
    subset: list[ToolRefExpr] = field(default_factory=list)
    #: Set by finalize: the exported tools (the subset, or every tool of the toolset).
    resolved_tools: list[ToolExpr] = field(default_factory=list, repr=False)

    def eval_name(self) -> str:
        return f"Export({self.toolset.name if self.toolset else '?'})"


# --------------------------------------------------------------------------- policy


@dataclass(eq=False)
class TagClauseExpr:
    """A tool passes when it has one of ``allowed_any`` (if given) and none of ``denied_any``."""

    loc: SourceLoc
    allowed_any: tuple[str, ...] = ()
    denied_any: tuple[str, ...] = ()


@dataclass(eq=False)
class RunPolicyExpr(Expr):
    func: ClassVar[str] = "RunPolicy"

    max_tool_calls: int | None = None
    max_consecutive_failed_tool_calls: int | None = None
    tag_clauses: list[TagClauseExpr] = field(default_factory=list)
    #: Seconds one model call of a run may take (``ModelTimeout``); None: the client's own.
    model_timeout: float | None = None
    model_timeout_loc: SourceLoc | None = None

    def eval_name(self) -> str:
        return "RunPolicy"


# --------------------------------------------------------------------------- agents and services


@dataclass(eq=False)
class AgentExpr(Expr):
    func: ClassVar[str] = "Agent"

    name: str = ""
    description: str = ""
    uses: list[UseExpr] = field(default_factory=list)
    exports: list[ExportExpr] = field(default_factory=list)
    policy: RunPolicyExpr | None = None

    def eval_name(self) -> str:
        return f"agent {q(self.name)}"

    @property
    def service(self) -> ServiceExpr:
        assert isinstance(self.parent, ServiceExpr)
        return self.parent


@dataclass(eq=False)
class ServiceExpr(Expr):
    func: ClassVar[str] = "Service"

    name: str = ""
    description: str | None = None
    agents: list[AgentExpr] = field(default_factory=list)
    exports: list[ExportExpr] = field(default_factory=list)

    def eval_name(self) -> str:
        return f"service {q(self.name)}"


@dataclass(eq=False)
class RootExpr:
    """Everything one design declared, in declaration order."""

    file: str
    #: The evaluation that builds this tree (set when it starts).
    evaluation: int = 0
    services: list[ServiceExpr] = field(default_factory=list)
    #: Every defining toolset: top-level ``Toolset`` calls and inline ``Use``/``Export`` ones.
    toolsets: list[ToolsetExpr] = field(default_factory=list)
    registries: list[RegistryExpr] = field(default_factory=list)
    #: Top-level ``Toolset`` calls whose declaration was refused (reported): no part of the
    #: design, but what a later ``Use("name")`` of one of their names meant.
    rejected_toolsets: list[ToolsetExpr] = field(default_factory=list, repr=False)

    def agents(self) -> list[AgentExpr]:
        return [agent for service in self.services for agent in service.agents]
