"""Rules that need the whole design: prepare → validate → finalize.

They run after every DSL call of the design ran, so a rule may look at anything: duplicates
across the design, overlapping sources within an agent, ``Deferred`` names against the full
list of tools a consumer compiles (local tools, tools of agents exported as tools, external MCP
tools declared inline), paging partners, template variables.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from urllib.parse import urlparse

from jinja2 import TemplateAssertionError, TemplateSyntaxError, meta
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel

from agentgen.dsl.arguments import argument_loc
from agentgen.dsl.errors import DesignError
from agentgen.dsl.expr import (
    AgentExpr,
    ExportExpr,
    Expr,
    ExternalMCPSource,
    RegistryExpr,
    RegistrySource,
    RootExpr,
    ServiceExpr,
    ToolExpr,
    ToolRefExpr,
    ToolsetExpr,
    TypeExpr,
    UseExpr,
)
from agentgen.dsl.location import SourceLoc
from agentgen.dsl.names import closest, did_you_mean, python_identifier, q, variable_name
from agentgen.dsl.types import Property, SchemaProblem, properties, type_name

DEFAULT_API_VERSION = "v1"
_URL_SCHEMES = ("http", "https", "grpc", "grpcs")
#: Names a confirmation template may use besides the tool's argument names.
TEMPLATE_GLOBALS = frozenset({"args"})
#: What to do about a source an agent uses twice.
_KEEP_ONE_USE = "; keep one Use, with the selections of both in its body"


def prepare(root: RootExpr) -> None:
    """Fill in defaults before validation reads the tree, and finish the design's models.

    A model referring to a class defined further down its module is completed by pydantic on
    first use; that must happen now, while the design module can still be read.
    """
    for registry in root.registries:
        if registry.api_version is None:
            registry.api_version = DEFAULT_API_VERSION
    for toolset in root.toolsets:
        for tool in toolset.tools:
            types = [tool.args, tool.result, *(d.schema for d in tool.server_data)]
            for expr in types:
                model = expr.value if expr is not None else None
                if (
                    isinstance(model, type)
                    and issubclass(model, BaseModel)
                    and not model.__pydantic_complete__
                ):
                    model.model_rebuild(raise_errors=False)


def validate(root: RootExpr) -> list[DesignError]:
    return _Validator(root).run()


def finalize(root: RootExpr) -> None:
    """Resolve what each consumer compiles: its tools and the local names it defers."""
    for agent in root.agents():
        for use in agent.uses:
            target = use.target
            if not isinstance(target, ToolsetExpr) or target.is_registry:
                continue
            use.resolved_tools = _selected(target, use.subset)
            if use.defers_all:
                partners = continuation_tools(target)
                use.resolved_deferred = sorted(
                    t.name for t in use.resolved_tools if t.name not in partners
                )
            else:
                use.resolved_deferred = sorted(name for name, _ in use.deferred_names)
    owners: list[ServiceExpr | AgentExpr] = [*root.services, *root.agents()]
    for owner in owners:
        for export in owner.exports:
            if export.toolset is not None:
                export.resolved_tools = _selected(export.toolset, export.subset)


def continuation_tools(toolset: ToolsetExpr) -> dict[str, str]:
    """Tools named by another tool's ``ContinueWith``: continuation name → source tool name."""
    return {
        tool.bounds.continue_with: tool.name
        for tool in toolset.tools
        if tool.bounds is not None and tool.bounds.continue_with is not None
    }


def _selected(toolset: ToolsetExpr, subset: Sequence[ToolRefExpr]) -> list[ToolExpr]:
    if not subset:
        return list(toolset.tools)
    wanted = {ref.name for ref in subset}
    return [tool for tool in toolset.tools if tool.name in wanted]


class _Validator:
    def __init__(self, root: RootExpr) -> None:
        self.root = root
        self.errors: list[DesignError] = []
        self.evaluation = root.evaluation

    def error(
        self,
        expr: Expr,
        message: str,
        *,
        loc: SourceLoc | None = None,
        related: tuple[SourceLoc, ...] = (),
    ) -> None:
        self.errors.append(DesignError(loc or expr.loc, expr.where(), message, related))

    def run(self) -> list[DesignError]:
        self.unique(self.root.services, "service")
        self.unique(self.root.registries, "registry")
        mistaken = self.names_for_toolsets()
        self.unique([t for t in self.root.toolsets if id(t) not in mistaken], "toolset")
        for registry in self.root.registries:
            self.registry(registry)
        for toolset in self.root.toolsets:
            if id(toolset) not in mistaken:
                self.toolset(toolset)
        for service in self.root.services:
            self.unique(service.agents, "agent", scope=f" within {service.eval_name()}")
            self.exports(service)
            for agent in service.agents:
                self.agent(agent)
        self.exporters()
        self.agent_cycles()
        return self.errors

    # ------------------------------------------------------------------ helpers

    def unique(
        self,
        exprs: Iterable[ServiceExpr | AgentExpr | RegistryExpr | ToolsetExpr | ToolExpr],
        kind: str,
        *,
        scope: str = "",
    ) -> None:
        first: dict[str, Expr] = {}
        for expr in exprs:
            if not expr.name:
                continue
            if expr.name in first:
                other = first[expr.name]
                self.error(
                    expr,
                    f"{kind} name {q(expr.name)} duplicates {'an' if kind[0] in 'aeiou' else 'a'} "
                    f"{kind} declared at "
                    f"{other.loc.short()}{scope}",
                    loc=argument_loc(expr.loc, 0, "name"),  # the name at fault
                    related=(other.loc,),
                )
            else:
                first[expr.name] = expr

    def names_for_toolsets(self) -> set[int]:
        """``Use("tickets")`` without tools, where a toolset named "tickets" exists: the design
        meant ``Use(Tickets)``. Reported once, at the Use, instead of as a duplicate toolset
        that declares no tools; returns the ``id()`` of each such in-place toolset."""
        mistaken: set[int] = set()
        for toolset in self.root.toolsets:
            empty = not (toolset.tools or toolset.rejected_tools or toolset.body_rejected)
            if toolset.owner != "agent-use" or not empty:
                continue
            # A Toolset whose declaration was refused counts: the Use still meant it, and
            # "declares no tools" would send the reader the wrong way.
            other = next(
                (
                    t
                    for t in (*self.root.toolsets, *self.root.rejected_toolsets)
                    if t.name == toolset.name and t is not toolset
                ),
                None,
            )
            if other is None:
                continue
            mistaken.add(id(toolset))
            variable = variable_name(toolset.name)
            refused = (
                " (its declaration was refused: see the error there)"
                if other in self.root.rejected_toolsets
                else ""
            )
            self.error(
                toolset,
                f"Use({q(toolset.name)}) defines a new toolset named {q(toolset.name)} in place, "
                f"but {other.eval_name()} is already defined at {other.loc.short()}{refused}; to "
                "consume it, pass the value Toolset(...) returned, not its name: "
                f"{variable} = Toolset({q(toolset.name)}, ...), then Use({variable})",
                related=(other.loc,),
            )
        return mistaken

    def meant(self, toolset: ToolsetExpr) -> str:
        """For ``Use("recrods")`` without tools where a toolset "records" exists: the design
        meant ``Use(Records)``, misspelling the name it passed instead of the value. The whole
        message, or an empty string."""
        if toolset.owner != "agent-use":
            return ""
        others = [
            t.name
            for t in (*self.root.toolsets, *self.root.rejected_toolsets)
            if t is not toolset and t.name
        ]
        name = closest(toolset.name, others)
        if name is None:
            return ""
        return (
            f"Use({q(toolset.name)}) defines a new toolset {q(toolset.name)} in place, which "
            f"declares no tools; did you mean toolset {q(name)}? To consume it, pass the "
            f"value Toolset(...) returned: Use({variable_name(name)})"
        )

    def foreign(self, expr: Expr, target: ToolsetExpr | RegistryExpr, how: str) -> bool:
        """Report ``target`` when another evaluation made it: a module that declares it at
        import was imported while another design (or ``evaluate``) ran, and stayed imported,
        so it did not run again for this one. Its expression is no part of this tree."""
        if target.evaluation == self.evaluation:
            return False
        self.error(
            expr,
            f"{how} {target.eval_name()} declared at {target.loc.short()}, which another design "
            "evaluation in this process created: the module declaring it was imported then "
            "and was not run again for this design; remove that module from sys.modules "
            "before loading this design (agentgen's loader unloads the modules that make DSL "
            "calls after each load), or declare it in this design",
            related=(target.loc,),
        )
        return True

    # ------------------------------------------------------------------ registries

    def registry(self, registry: RegistryExpr) -> None:
        if registry.url is None:
            # A refused URL(...), or a body given wrongly (Registry("r", URL(...))), is
            # reported already.
            if "URL" not in registry.refused and not registry.body_rejected:
                self.error(registry, 'registry URL is required; set it with URL("https://...")')
        else:
            loc = registry.url_loc or registry.loc
            parsed = urlparse(registry.url)
            if parsed.scheme not in _URL_SCHEMES or not parsed.netloc:
                self.error(
                    registry,
                    f"invalid registry URL {q(registry.url)}: expected an absolute "
                    f"{'/'.join(_URL_SCHEMES)} URL such as https://registry.example",
                    loc=loc,
                )
            elif parsed.password is not None:
                # Generated packages are committed: a password in the URL would be too (and
                # this message must not repeat it).
                masked = parsed._replace(
                    netloc=f"{parsed.username}:***@{parsed.netloc.rpartition('@')[2]}"
                ).geturl()
                self.error(
                    registry,
                    f"registry URL {q(masked)} carries a password, which would be written into "
                    "the generated packages you commit: remove it, and give the registry "
                    "client a token (AGENTGEN_REGISTRY_TOKEN, or token=...) instead",
                    loc=loc,
                )
            elif "?" in registry.url or "#" in registry.url:
                # Clients append the API path to the URL (``{url}/v1/...``): after a query or a
                # fragment it would land in them, and every request would reach another
                # address. The message leaves them out: a query often carries a token.
                base = registry.url.split("?", 1)[0].split("#", 1)[0]
                self.error(
                    registry,
                    f"registry URL {q(base)} is followed by a query or a fragment (?... or "
                    "#...): clients append the API path to the URL, so every request would go "
                    "to another address; give the base URL only",
                    loc=loc,
                )
            else:
                try:
                    _ = parsed.port
                except ValueError as exc:
                    self.error(registry, f"invalid registry URL {q(registry.url)}: {exc}", loc=loc)

    # ------------------------------------------------------------------ toolsets and tools

    def toolset(self, toolset: ToolsetExpr) -> None:
        for registry, _ in toolset.publish_to:
            if self.foreign(toolset, registry, "PublishTo refers to"):
                break
        if isinstance(toolset.source, RegistrySource):
            self.foreign(toolset, toolset.source.registry, "FromRegistry refers to")
        if toolset.is_registry:
            return
        if not toolset.tools and not toolset.rejected_tools and not toolset.body_rejected:
            if isinstance(toolset.source, ExternalMCPSource):
                self.error(
                    toolset,
                    "external MCP toolsets require inline Tool declarations (with their "
                    "schemas); declare the tools in the Toolset body",
                )
            else:
                # A misspelt Use("name") of an existing toolset says so first: adding tools
                # is not the fix.
                self.error(
                    toolset,
                    self.meant(toolset) or "toolset declares no tools; add Tool(...) to its body",
                )
        self.unique(toolset.tools, "tool", scope=f" in {toolset.eval_name()}")
        identifiers: dict[str, ToolExpr] = {}
        for tool in toolset.tools:
            ident = python_identifier(tool.name)
            other = identifiers.get(ident)
            if other is not None and other.name != tool.name:
                self.error(
                    tool,
                    f"tool names {q(other.name)} and {q(tool.name)} map to the same Python "
                    f"identifier {q(ident)}",
                    related=(other.loc,),
                )
            identifiers.setdefault(ident, tool)
            self.tool(tool)
        if isinstance(toolset.source, ExternalMCPSource):
            self.server_names(toolset)
        self.paging(toolset)

    def server_names(self, toolset: ToolsetExpr) -> None:
        """Two tools of an external MCP toolset cannot call the same server tool: the
        server's name is what ``tools/call`` and the start-up check use."""
        calling: dict[str, ToolExpr] = {}
        for tool in toolset.tools:
            other = calling.setdefault(tool.server_name, tool)
            if other is not tool and other.name != tool.name:
                self.error(
                    tool,
                    f"{tool.eval_name()} and {other.eval_name()} (line {other.loc.line}) both "
                    f"call the MCP server's tool {q(tool.server_name)} in {toolset.eval_name()}; "
                    "give each its own MCPName",
                    loc=tool.mcp_name_loc or tool.loc,
                    related=(other.mcp_name_loc or other.loc,),
                )

    def tool(self, tool: ToolExpr) -> None:
        if tool.description is None:
            self.error(
                tool,
                "tool needs a description (Tool(name, description) or Description(...)): "
                "models choose tools by it and tool search indexes it",
            )
        kinds: dict[str, SourceLoc] = {}
        for data in tool.server_data:
            if data.kind in kinds:
                self.error(
                    data,
                    f"ServerData kind {q(data.kind)} must be unique within a tool (first at "
                    f"line {kinds[data.kind].line})",
                    related=(kinds[data.kind],),
                )
            elif data.kind:
                kinds[data.kind] = data.loc
        confirmation = tool.confirmation
        if confirmation is not None:
            # Argument names are read only when a template needs them: computing JSON
            # Schemas is the slowest part of validating a large design.
            # Args(...) refused (reported): which names the templates may read is unknown.
            args = None if "Args" in tool.refused else self.props(tool, tool.args, "Args")
            for label, text, loc in (
                ("PromptTemplate", confirmation.prompt_template, confirmation.prompt_loc),
                (
                    "DeniedResultTemplate",
                    confirmation.denied_result_template,
                    confirmation.denied_result_loc,
                ),
            ):
                if text is None:
                    if label not in confirmation.refused:  # a refused one is reported already
                        self.error(confirmation, f"Confirmation requires a {label}(...)")
                else:
                    self.template(confirmation, label, text, loc or confirmation.loc, args)

    def props(self, tool: ToolExpr, expr: TypeExpr | None, func: str) -> dict[str, Property] | None:
        if expr is None:
            return {}
        try:
            return properties(expr)
        except SchemaProblem as exc:
            self.error(
                tool, f"{func} model {type_name(expr)} has no JSON Schema: {exc}", loc=expr.loc
            )
            return None

    def template(
        self,
        expr: Expr,
        label: str,
        text: str,
        loc: SourceLoc,
        args: dict[str, Property] | None,
    ) -> None:
        env = SandboxedEnvironment()
        try:
            names = meta.find_undeclared_variables(env.parse(text))
        except TemplateAssertionError:
            # A filter or test Jinja does not have: the generator's rule reports it, against
            # the runtime's sandbox (which has fewer); the names are still read.
            names = _names_despite_syntax_error(env, text)
        except TemplateSyntaxError as exc:
            self.error(expr, f"{label} is not a valid template: {exc.message}", loc=loc)
            # The rest of the template is still read, so that its other mistakes (a name
            # the Args do not declare) come out in the same run.
            names = _names_despite_syntax_error(env, text)
        if args is None:
            return
        unknown = sorted(names - set(args) - TEMPLATE_GLOBALS)
        if unknown:
            known = ", ".join(sorted(args)) or "none"
            self.error(
                expr,
                f"{label} refers to {', '.join(q(n) for n in unknown)}, which the tool's Args "
                f"do not declare (arguments: {known}; optional ones are read as "
                '{{ args.get("name") }})',
                loc=loc,
            )

    def paging(self, toolset: ToolsetExpr) -> None:
        referenced: dict[str, ToolExpr] = {}
        for tool in toolset.tools:
            bounds = tool.bounds
            if bounds is None:
                continue
            # A refused Cursor(...) or NextCursor(...) is reported already, not missing.
            refused = bounds.refused
            if (
                bounds.cursor is not None
                and bounds.next_cursor is None
                and "NextCursor" not in refused
            ):
                self.error(bounds, "Cursor() requires NextCursor() to configure paging")
            if bounds.next_cursor is not None and bounds.cursor is None and "Cursor" not in refused:
                self.error(bounds, "NextCursor() requires Cursor() to configure paging")
            if bounds.cursor is not None:
                self.paging_field(
                    tool,
                    tool.args,
                    "Args",
                    "Cursor",
                    bounds.cursor,
                    bounds.cursor_loc or bounds.loc,
                )
            if bounds.next_cursor is not None:
                self.paging_field(
                    tool,
                    tool.result,
                    "Return",
                    "NextCursor",
                    bounds.next_cursor,
                    bounds.next_cursor_loc or bounds.loc,
                )
            name = bounds.continue_with
            if name is None:
                continue
            loc = bounds.continue_loc or bounds.loc
            if not bounds.paging and not refused & {"Cursor", "NextCursor"}:
                self.error(bounds, "ContinueWith requires Cursor() and NextCursor()", loc=loc)
            partner = toolset.tool(name)
            if partner is None and name in toolset.rejected_names:
                continue  # the tool's own name was refused (reported)
            if partner is None:
                self.error(
                    bounds,
                    f"ContinueWith references unknown tool {q(name)} (tools of "
                    f"{toolset.eval_name()}: {', '.join(t.name for t in toolset.tools)})"
                    f"{did_you_mean(name, [t.name for t in toolset.tools if t is not tool])}",
                    loc=loc,
                )
                continue
            if partner is tool:
                self.error(
                    bounds,
                    f"ContinueWith cannot name the tool itself ({q(name)}): a tool whose own "
                    "Cursor fetches its next pages needs no ContinueWith, so leave it out; "
                    "ContinueWith names another tool of the toolset that fetches them",
                    loc=loc,
                )
                continue
            if name in referenced:
                self.error(
                    bounds,
                    f"continuation tool {q(name)} is referenced by more than one bounded tool "
                    f"({q(referenced[name].name)} and {q(tool.name)})",
                    loc=loc,
                )
            referenced.setdefault(name, tool)
            if partner.bounds is None or (
                partner.bounds.cursor is None and "Cursor" not in partner.bounds.refused
            ):
                self.error(
                    bounds,
                    f"continuation tool {q(name)} must declare Cursor(...) inside its own "
                    "BoundedResult",
                    loc=loc,
                )

    def paging_field(
        self,
        tool: ToolExpr,
        expr: TypeExpr | None,
        where: str,
        func: str,
        field: str,
        loc: SourceLoc,
    ) -> None:
        if expr is None:
            if where not in tool.refused:  # a refused Args/Return is reported already
                self.error(
                    tool, f"{func}({q(field)}) needs the tool to declare {where}(...)", loc=loc
                )
            return
        try:
            props = properties(expr)
        except SchemaProblem:
            return  # reported by props()
        prop = props.get(field)
        if prop is None:
            self.error(
                tool,
                f"{func}({q(field)}): {where} type {type_name(expr)} has no field {q(field)} "
                f"(fields: {', '.join(sorted(props)) or 'none'})",
                loc=loc,
            )
        elif prop.required or not prop.is_string:
            self.error(
                tool,
                f"{func}({q(field)}): field {q(field)} of {type_name(expr)} must be an "
                "optional string (str | None = None)",
                loc=loc,
            )

    # ------------------------------------------------------------------ agents and services

    def exports(self, owner: ServiceExpr | AgentExpr) -> None:
        seen: dict[int, ExportExpr] = {}
        for export in owner.exports:
            toolset = export.toolset
            if toolset is None or self.foreign(export, toolset, "Export refers to"):
                continue
            if id(toolset) in seen:
                self.error(
                    export,
                    f"{owner.eval_name()} exports {toolset.eval_name()} more than once (first "
                    f"at line {seen[id(toolset)].loc.line})",
                )
            seen.setdefault(id(toolset), export)
            if isinstance(owner, ServiceExpr) and export.subset:
                # The exporting service owns the toolset's one package (and what PublishTo
                # publishes), which holds every tool its consumers use: a selection here was
                # accepted and then ignored.
                self.error(
                    export,
                    f"{owner.eval_name()} exports the whole {toolset.eval_name()}: its package "
                    "holds every tool, and a selection here would be ignored; remove the "
                    "Tool(...) selection, and select tools where they are used: "
                    f"Use({variable_name(toolset.name)}, lambda: Tool({q(export.subset[0].name)}))",
                    loc=export.subset[0].loc,
                )
                continue
            self.subset(export, toolset, export.subset)

    def exporters(self) -> None:
        """One service exports a toolset: it owns the toolset's package and registration
        name (``service.toolset``); another service's export of it was ignored."""
        first: dict[int, ExportExpr] = {}
        for service in self.root.services:
            for export in service.exports:
                toolset = export.toolset
                if toolset is None or toolset.is_registry:
                    continue
                earlier = first.setdefault(id(toolset), export)
                if earlier is export or earlier.parent is service:
                    continue  # a repeat within one service is reported by exports()
                other = earlier.parent
                assert isinstance(other, ServiceExpr)
                self.error(
                    export,
                    f"{toolset.eval_name()} is already exported by {other.eval_name()} (at "
                    f"{earlier.loc.short()}), which owns its package and registers it as "
                    f"{q(other.name + '.' + toolset.name)}; a toolset is exported by one "
                    f"service: remove this Export (agents of {service.eval_name()} can use "
                    "it all the same)",
                    related=(earlier.loc,),
                )

    def subset(self, expr: Expr, toolset: ToolsetExpr, subset: Sequence[ToolRefExpr]) -> None:
        names: dict[str, SourceLoc] = {}
        for ref in subset:
            if ref.name in names:
                self.error(
                    expr,
                    f"tool {q(ref.name)} is selected more than once (first at line "
                    f"{names[ref.name].line})",
                    loc=ref.loc,
                )
            elif toolset.tool(ref.name) is None and not _refused_tool(toolset, ref.name):
                self.error(
                    expr,
                    f"selects unknown tool {q(ref.name)} of {toolset.eval_name()} (its tools: "
                    f"{', '.join(t.name for t in toolset.tools) or 'none'})"
                    f"{did_you_mean(ref.name, [t.name for t in toolset.tools])}",
                    loc=ref.loc,
                )
            names.setdefault(ref.name, ref.loc)
        if not subset:
            return
        consumer = "Use" if isinstance(expr, UseExpr) else "Export"
        for name, loc in names.items():
            tool = toolset.tool(name)
            bounds = tool.bounds if tool is not None else None
            partner = bounds.continue_with if bounds is not None else None
            if partner is None or partner in names or toolset.tool(partner) is None:
                continue
            self.error(
                expr,
                f"this {consumer} selects tool {q(name)} of {toolset.eval_name()} without "
                f"{q(partner)}, the tool that fetches its further pages "
                f"(ContinueWith({q(partner)})); add Tool({q(partner)}) to the selection",
                loc=loc,
            )

    def agent(self, agent: AgentExpr) -> None:
        self.exports(agent)
        toolsets: dict[int, UseExpr] = {}
        registries: dict[int, UseExpr] = {}
        sources: dict[tuple[int, str], UseExpr] = {}
        for use in agent.uses:
            target = use.target
            if target is not None and self.foreign(use, target, "Use refers to"):
                continue
            if isinstance(target, RegistryExpr):
                if id(target) in registries:
                    first = registries[id(target)]
                    self.error(
                        use,
                        f"{agent.eval_name()} consumes registry {q(target.name)} more than once "
                        f"(first at line {first.loc.line})"
                        f"{_KEEP_ONE_USE}",
                        related=(first.loc,),
                    )
                for (reg, name), other in sources.items():
                    if reg == id(target):
                        self.error(
                            use,
                            f"whole registry {q(target.name)} overlaps its toolset {q(name)} "
                            f"already used at line {other.loc.line}; "
                            "consume either the whole registry or named toolsets",
                            related=(other.loc,),
                        )
                registries.setdefault(id(target), use)
                continue
            if not isinstance(target, ToolsetExpr):
                continue
            if id(target) in toolsets:
                first = toolsets[id(target)]
                self.error(
                    use,
                    f"{agent.eval_name()} uses {target.eval_name()} more than once (first at "
                    f"line {first.loc.line})"
                    f"{_KEEP_ONE_USE}",
                    related=(first.loc,),
                )
                continue
            toolsets[id(target)] = use
            if target.owner == "agent-export" and target.parent is agent:
                self.error(use, f"{agent.eval_name()} cannot use a toolset it exports itself")
            if isinstance(target.source, RegistrySource):
                self.registry_source(agent, use, target.source, registries, sources)
            else:
                self.subset(use, target, use.subset)
                self.deferred(agent, use, target)
        self.published_overlaps(agent)

    def agent_cycles(self) -> None:
        """Agents that reach themselves through each other's exported tools (A uses B's
        export, B uses A's): a run of one starts a child run of the other, which starts one of
        the first... with nothing to end it but the model's choice. Agents as tools are static,
        so the cycle is refused here, once, at the Use that closes it. An export published to
        a registry (``PublishTo``) is called through it too: by a ``FromRegistry(registry,
        "<service>.<toolset>")`` of it, or by the whole registry."""
        calls: dict[int, list[tuple[AgentExpr, UseExpr]]] = {}
        agents = list(self.root.agents())
        published: list[tuple[ToolsetExpr, AgentExpr, RegistryExpr]] = []
        for toolset in self.root.toolsets:
            exporter = toolset.parent
            if toolset.owner == "agent-export" and isinstance(exporter, AgentExpr):
                published.extend((toolset, exporter, reg) for reg, _ in toolset.publish_to)
        for agent in agents:
            for use in agent.uses:
                target = use.target
                read: tuple[RegistryExpr, str | None] | None = None
                if isinstance(target, RegistryExpr):
                    read = (target, None)
                elif isinstance(target, ToolsetExpr) and isinstance(target.source, RegistrySource):
                    read = (target.source.registry, target.source.toolset)
                if read is not None and use.evaluation == self.evaluation:
                    registry, name = read
                    # Registration names are "<service>.<toolset>" (see published_overlaps).
                    calls.setdefault(id(agent), []).extend(
                        (exporter, use)
                        for toolset, exporter, to in published
                        if to is registry
                        and (
                            name is None
                            or ("." in name and name.rpartition(".")[2] == toolset.name)
                        )
                    )
                    continue
                callee = target.parent if isinstance(target, ToolsetExpr) else None
                if (
                    isinstance(target, ToolsetExpr)
                    and target.owner == "agent-export"
                    and isinstance(callee, AgentExpr)
                    and callee is not agent  # reported as an agent using its own export
                    and target.evaluation == self.evaluation
                ):
                    calls.setdefault(id(agent), []).append((callee, use))
        state: dict[int, int] = {}  # 1: on the current path, 2: done
        reported: set[frozenset[int]] = set()
        for start in agents:
            if state.get(id(start)):
                continue
            path: list[tuple[AgentExpr, UseExpr | None]] = [(start, None)]
            pending = [iter(calls.get(id(start), ()))]
            state[id(start)] = 1
            while pending:
                step = next(pending[-1], None)
                if step is None:
                    state[id(path.pop()[0])] = 2
                    pending.pop()
                    continue
                callee, use = step
                if state.get(id(callee)) == 1:
                    index = next(i for i, (a, _) in enumerate(path) if a is callee)
                    cycle = [*path[index + 1 :], (callee, use)]
                    key = frozenset(id(a) for a, _ in cycle)
                    if key not in reported:
                        reported.add(key)
                        self.cycle_error(callee, cycle)
                elif not state.get(id(callee)):
                    state[id(callee)] = 1
                    path.append((callee, use))
                    pending.append(iter(calls.get(id(callee), ())))

    def cycle_error(self, first: AgentExpr, cycle: list[tuple[AgentExpr, UseExpr | None]]) -> None:
        """``cycle``: each agent with the Use (of the agent before it) that calls it, the
        first agent last."""
        names = [q(_agent_id(a)) for a in (first, *(a for a, _ in cycle))]
        uses = [use for _, use in cycle if use is not None]
        steps = ", ".join(
            f"{q(_agent_id(use.agent))} uses {use.eval_name()} at line {use.loc.line}"
            for use in uses
        )
        closing = uses[-1]
        if len(cycle) == 1:
            # Only a registry closes a cycle of one (an agent using its own export directly is
            # refused as such): the agent reads its own published export back.
            self.error(
                closing,
                f"agent {names[0]} calls itself: {steps}, which serves the agent's own "
                "exported tools once published (PublishTo): each run would start child runs "
                "of itself without end; remove this Use or the export's PublishTo",
            )
            return
        self.error(
            closing,
            f"agents {' → '.join(names)} call each other through their exported tools "
            f"({steps}): a run of one would start child runs of the other without end; remove "
            "one of these Uses (an agent may hand work to another, not back)",
            related=tuple(use.loc for use in uses[:-1]),
        )

    def published_overlaps(self, agent: AgentExpr) -> None:
        """A toolset the agent uses that is also published to a registry the agent reads, as
        a whole or through ``FromRegistry(registry, "<service>.<toolset>")``: once the provider
        publishes, the registry serves the same tool IDs the compiled toolset supplies, and
        every planning activity of the agent fails with a duplicate tool."""
        published: list[tuple[UseExpr, ToolsetExpr, RegistryExpr, SourceLoc]] = []
        readers: list[tuple[UseExpr, RegistryExpr, str | None]] = []
        for use in agent.uses:
            target = use.target
            if target is None or target.evaluation != self.evaluation:
                continue
            if isinstance(target, RegistryExpr):
                readers.append((use, target, None))
            elif isinstance(target, ToolsetExpr) and isinstance(target.source, RegistrySource):
                readers.append((use, target.source.registry, target.source.toolset))
            elif isinstance(target, ToolsetExpr):
                published.extend((use, target, reg, loc) for reg, loc in target.publish_to)
        for local_use, toolset, registry, publish_loc in published:
            for reader, read, name in readers:
                # Registration names are "<service>.<toolset>": a name without a service is
                # another provider's toolset.
                if read is not registry or (
                    name is not None and ("." not in name or name.rsplit(".", 1)[1] != toolset.name)
                ):
                    continue
                first, later = sorted((local_use, reader), key=lambda u: u.loc)
                variable = variable_name(toolset.name)
                what = (
                    f"the whole registry {q(registry.name)}"
                    if name is None
                    else f"registry toolset {q(name)} of registry {q(registry.name)}"
                )
                self.error(
                    later,
                    f"{agent.eval_name()} uses {toolset.eval_name()} (line {local_use.loc.line}) "
                    f"and {what} (line {reader.loc.line}), which serves that same toolset once "
                    f"published (PublishTo({variable_name(registry.name)}) at line "
                    f"{publish_loc.line}): the agent would get its tools twice and every run "
                    "would fail; "
                    + (
                        f"consume either the whole registry (without Use({variable})) or "
                        f"Use({variable}) "
                        "and the registry's other toolsets by name (Toolset(FromRegistry("
                        f'{variable_name(registry.name)}, "<service>.<toolset>")))'
                        if name is None
                        else "remove one of the two Uses"
                    ),
                    related=(first.loc, publish_loc),
                )

    def registry_source(
        self,
        agent: AgentExpr,
        use: UseExpr,
        source: RegistrySource,
        registries: dict[int, UseExpr],
        sources: dict[tuple[int, str], UseExpr],
    ) -> None:
        registry = source.registry
        whole = registries.get(id(registry))
        if whole is not None:
            self.error(
                use,
                f"registry toolset {q(source.toolset)} overlaps whole registry "
                f"{q(registry.name)} consumed at line {whole.loc.line}; consume either the "
                "whole registry or named toolsets",
                related=(whole.loc,),
            )
        key = (id(registry), source.toolset)
        if key in sources:
            first = sources[key]
            self.error(
                use,
                f"{agent.eval_name()} uses registry toolset {q(source.toolset)} of registry "
                f"{q(registry.name)} more than once (first at line {first.loc.line})"
                f"{_KEEP_ONE_USE}",
                related=(first.loc,),
            )
        sources.setdefault(key, use)

    def deferred(self, agent: AgentExpr, use: UseExpr, toolset: ToolsetExpr) -> None:
        if not use.deferred_names or not toolset.tools:
            return  # a toolset without tools is reported as such: every name would be unknown
        all_names = {t.name for t in toolset.tools}
        included = list(dict.fromkeys(t.name for t in _selected(toolset, use.subset)))
        partners = continuation_tools(toolset)
        agent_id = _agent_id(agent)
        # Each error carets the name at fault: the file is parsed only when one is reported.
        for name, position, call_loc in (
            (name, position, d.loc) for d in use.deferred for position, name in enumerate(d.names)
        ):
            prefix = f"agent {q(agent_id)} toolset {q(toolset.name)}: Deferred selects"
            if name in included:
                if name in partners:
                    self.error(
                        use,
                        f"{prefix} {q(name)}, which continues the pagination of "
                        f"{q(partners[name])}: continuation tools are never deferred (the model "
                        "must see it to fetch the next page); remove it from Deferred(...)",
                        loc=argument_loc(call_loc, position),
                    )
                continue
            if name in all_names:
                self.error(
                    use,
                    f"{prefix} tool {q(name)}, which this Use does not include (it includes: "
                    f"{', '.join(included)})",
                    loc=argument_loc(call_loc, position),
                )
                continue
            if _refused_tool(toolset, name):
                if (
                    use.subset
                    and "Tool" not in use.refused
                    and not toolset.body_rejected
                    and name not in {ref.name for ref in use.subset}
                ):
                    # Refused (reported) or not, the tool is not one this Use selects: the
                    # Deferred is a mistake of its own, still one once the tool is fixed.
                    self.error(
                        use,
                        f"{prefix} tool {q(name)}, which this Use does not include (it "
                        f"includes: {', '.join(included)})",
                        loc=argument_loc(call_loc, position),
                    )
                continue
            local = name.rsplit(".", 1)[-1]
            if local != name and local in included:
                hint = f"; use the local name {q(local)}, not a qualified one"
            else:
                hint = did_you_mean(name, included)
            self.error(
                use,
                f"{prefix} unknown tool {q(name)} (its tools: {', '.join(included) or 'none'})"
                f"{hint}",
                loc=argument_loc(call_loc, position),
            )


def _refused_tool(toolset: ToolsetExpr, name: str) -> bool:
    """Whether ``name`` may be a tool of ``toolset`` whose declaration was refused (reported):
    its name was refused, or the toolset's body was. A reference to it is then no unknown
    tool; reporting one would only repeat the first mistake as another."""
    return name in toolset.rejected_names or toolset.body_rejected


def _names_despite_syntax_error(env: SandboxedEnvironment, text: str) -> set[str]:
    """The variables a template that does not parse as a whole reads, found expression by
    expression: each ``{{ ... }}``, each ``if``/``elif`` condition and each ``for`` iterable
    is parsed on its own; names bound by ``for`` and ``set`` do not count. Expressions that do
    not parse either are skipped (the syntax error is already reported)."""
    try:
        tokens = [(kind, value) for _, kind, value in env.lex(text) if kind != "whitespace"]
    except TemplateSyntaxError:
        return set()
    expressions: list[str] = []
    bound: set[str] = set()
    index = 0
    while index < len(tokens):
        kind, _ = tokens[index]
        end_kind = {"variable_begin": "variable_end", "block_begin": "block_end"}.get(kind)
        if end_kind is None:
            index += 1
            continue
        end = index + 1
        while end < len(tokens) and tokens[end][0] != end_kind:
            end += 1
        body = [value for _, value in tokens[index + 1 : end]]
        index = end + 1
        if kind == "variable_begin":
            expressions.append(" ".join(body))
        elif body[:1] in (["if"], ["elif"]):
            expressions.append(" ".join(body[1:]))
        elif body[:1] == ["for"] and "in" in body:
            split = body.index("in")
            bound.update(n for n in body[1:split] if n.isidentifier())
            expressions.append(" ".join(body[split + 1 :]))
        elif body[:1] == ["set"]:
            split = body.index("=") if "=" in body else len(body)
            bound.update(n for n in body[1:split] if n.isidentifier())
            expressions.append(" ".join(body[split + 1 :]))
    names: set[str] = set()
    for expression in expressions:
        try:
            names |= meta.find_undeclared_variables(env.parse("{{ " + expression + " }}"))
        except TemplateSyntaxError:
            continue
    return names - bound


def _agent_id(agent: AgentExpr) -> str:
    return f"{agent.service.name}.{agent.name}"
