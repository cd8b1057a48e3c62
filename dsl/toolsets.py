"""Toolsets, tools, and what describes them: types, titles, tags, confirmation, bounds,
server data."""

from __future__ import annotations

from typing import Any

from agentgen.dsl.call import Call, Invalid, begin, open_scope
from agentgen.dsl.expr import (
    BoundsExpr,
    ConfirmationExpr,
    ExportExpr,
    Expr,
    ExternalMCPSource,
    LocalSource,
    RegistryExpr,
    RegistrySource,
    ServerDataAudience,
    ServerDataExpr,
    ServiceExpr,
    ToolExpr,
    ToolRefExpr,
    ToolsetExpr,
    ToolsetSource,
    TypeExpr,
    UseExpr,
)
from agentgen.dsl.names import (
    lone_surrogate,
    mcp_server_name_problem,
    name_problem,
    q,
    suggest_name,
    variable_name,
)

_AUDIENCES: tuple[ServerDataAudience, ...] = ("timeline", "internal", "evidence")


def Toolset(*args: object) -> ToolsetExpr:
    """Define a toolset at the top level of the design.

    Forms: ``Toolset(name, body)``, ``Toolset(FromRegistry(registry, toolset))`` (name taken
    from the source unless given), ``Toolset(name, FromExternalMCP(service, toolset), body)``.
    """
    call = begin("Toolset")
    values, body = call.split_body(args)
    names = [v for v in values if isinstance(v, str)]
    sources = [v for v in values if isinstance(v, LocalSource | ExternalMCPSource | RegistrySource)]
    invalid = [v for v in values if isinstance(v, Invalid)]
    others = [v for v in values if v not in names and v not in sources and v not in invalid]
    for other in others:
        call.error(
            "Toolset takes a name, a source (FromRegistry/FromExternalMCP) and a body; "
            f"got {type(other).__name__}{call.called_body_hint(other)}",
            arg=(_position(args, other), None),
        )
    if len(names) > 1:
        call.error(
            f"Toolset accepts one name, got {len(names)} "
            f"({', '.join(q(n[:40] + '...' if len(n) > 40 else n) for n in names)}); a body "
            "is a callable, not a string (lambda: Tool(...)), and a description goes in it "
            "(Description(...))",
            arg=(_position(args, names[1]), None),
        )
    if len(sources) > 1:
        call.error(f"Toolset accepts one source, got {len(sources)}")
    source: ToolsetSource = sources[0] if sources else LocalSource()
    name = names[0] if names else None
    borrowed = name is None and isinstance(source, RegistrySource | ExternalMCPSource)
    if isinstance(source, RegistrySource | ExternalMCPSource) and name is None:
        name = source.toolset
    expr = ToolsetExpr(call.loc, None, name=name or "", source=source)
    if body is None and (others or len(names) > 1):
        # A refused argument may be the body written wrongly (a string, a call's result):
        # "declares no tools" and "unknown tool" would only repeat that mistake.
        expr.body_rejected = True
    valid = not invalid
    if invalid:
        # Its source was refused (reported): whether its tools are an MCP server's is unknown.
        expr.refused.add("source")
    if name is None:
        if valid and not others:  # a refused argument (reported) may be the name given wrongly
            call.error("toolset name cannot be empty: Toolset(name, body)")
        valid = False
    elif borrowed and name_problem("toolset", name) is not None:
        # The source's own name ("hr.directory": registrations are service.toolset) is
        # not ours to rename: the design gives the toolset a local name instead.
        assert isinstance(source, RegistrySource | ExternalMCPSource)
        local = suggest_name("toolset", name.rsplit(".", 1)[-1]) or "tools"
        call.error(
            f"the source's toolset name {q(name)} cannot name a toolset of this design; give "
            f"it a local one: Toolset({q(local)}, {_source_call(source)})"
        )
        valid = False
    elif call.name("toolset", name, arg=(_position(args, name), None)) is None:
        valid = False
    top = call.at_top_level("at the top level of the design (assign it: Records = Toolset(...))")
    if top and valid:
        call.ctx.root.toolsets.append(expr)
    elif top:
        # A toolset whose declaration was rejected is not validated further: its errors are
        # already reported and would only repeat as follow-on errors.
        call.ctx.root.rejected_toolsets.append(expr)
    return open_scope(call, expr, body)


def _position(args: tuple[object, ...], value: object) -> int | None:
    """The position of ``value`` (itself, not an equal one) among a call's arguments."""
    return next((i for i, arg in enumerate(args) if arg is value), None)


def _source_call(source: RegistrySource | ExternalMCPSource) -> str:
    """How the design wrote ``source``, for a message showing the fix."""
    if isinstance(source, RegistrySource):
        return f"FromRegistry({variable_name(source.registry.name)}, {q(source.toolset)})"
    return f"FromExternalMCP({q(source.service)}, {q(source.toolset)})"


def FromExternalMCP(service: str, toolset: str) -> ExternalMCPSource | Invalid:
    """A toolset served by an external MCP server; declare its tools (with schemas) inline."""
    call = begin("FromExternalMCP")
    ok_service = call.text("service", service, arg=(0, "service"))
    ok_toolset = call.text("toolset", toolset, arg=(1, "toolset"))
    if ok_service is None or ok_toolset is None:
        return Invalid()
    return ExternalMCPSource(service=ok_service, toolset=ok_toolset)


def _tool_container(call: Call) -> ToolsetExpr | UseExpr | ExportExpr | None:
    scope = call.scope
    if isinstance(scope, ToolsetExpr):
        if scope.is_registry:
            call.error(
                f"registry toolset {q(scope.name)} cannot declare inline Tool schemas or "
                "subsets: its provider owns the tool definitions"
            )
            return None
        return scope
    if isinstance(scope, UseExpr):
        target = scope.target
        if isinstance(target, RegistryExpr) or (
            isinstance(target, ToolsetExpr) and target.is_registry
        ):
            call.error(
                "a registry reference cannot declare inline Tool schemas or subsets: the "
                "registry's provider owns the tool definitions"
            )
            return None
        return scope if target is not None else None
    if isinstance(scope, ExportExpr):
        return scope if scope.toolset is not None else None
    call.scope_error("inside a Toolset, Use or Export body")
    return None


def Tool(name: str, *args: object) -> ToolExpr:
    """Declare a tool (``Tool(name, description, body)``), or inside the ``Use`` of an existing
    toolset select one of its tools by name (``Tool("lookup")``)."""
    call = begin("Tool")
    values, body = call.split_body(args)
    description: str | None = None
    if values:
        # A rejected description (reported) counts as given, so no "needs a description" follows.
        description = call.text("description", values[0], arg=(1, None)) or ""
        if len(values) > 1:
            call.too_many(values[1:], "a name, a description and an optional body", 2)
    container = _tool_container(call)
    toolset: ToolsetExpr | None = None
    if isinstance(container, ToolsetExpr):
        toolset = container
    elif isinstance(container, UseExpr | ExportExpr) and container_defines(container):
        toolset = _defined_toolset(container)
    mcp = toolset is not None and (
        isinstance(toolset.source, ExternalMCPSource) or "source" in toolset.refused
    )  # a refused source may have been FromExternalMCP: its tools' names are held to less
    expr = ToolExpr(call.loc, toolset, name=name if isinstance(name, str) else "")
    expr.description = description
    if isinstance(container, UseExpr | ExportExpr) and not container_defines(container):
        # A subset of an existing toolset: only the local name is meaningful.
        if call.name("tool", name, mcp_tool=True, arg=(0, "name")) is not None:
            if description is not None or body is not None:
                call.error(
                    "the Use or Export of an existing toolset selects its tools by name only: "
                    f"Tool({q(name)}); declare descriptions and types in its Toolset"
                )
            else:
                container.subset.append(ToolRefExpr(call.loc, name))
                return expr
        # A selection left out (reported): what the Use includes is not known, so its
        # Deferred names are not held to the rest of the selection.
        container.refused.add("Tool")
        return expr
    if toolset is not None:
        if call.name("tool", name, mcp_tool=mcp, arg=(0, "name")) is not None:
            toolset.tools.append(expr)
        else:
            toolset.rejected_tools += 1
            toolset.rejected_decls.append(expr)
            if isinstance(name, str):
                toolset.rejected_names.add(name)
    return open_scope(call, expr, body)


def container_defines(container: UseExpr | ExportExpr) -> bool:
    return container.defines


def _defined_toolset(container: UseExpr | ExportExpr) -> ToolsetExpr | None:
    if isinstance(container, UseExpr):
        return container.target if isinstance(container.target, ToolsetExpr) else None
    return container.toolset


def _set_type(func: str, value: Any) -> None:
    call = begin(func)
    tool = call.expect((ToolExpr,), "inside a Tool body")
    if tool is None:
        return
    field = "args" if func == "Args" else "result"
    if call.repeated(tool, tool.eval_name()):
        return
    parent = tool.parent
    mcp = isinstance(parent, ToolsetExpr) and isinstance(parent.source, ExternalMCPSource)
    # A toolset whose source was refused (reported) may be FromExternalMCP: a JSON Schema is
    # no second mistake there.
    unknown_source = isinstance(parent, ToolsetExpr) and "source" in parent.refused
    from pydantic import BaseModel

    if isinstance(value, type) and issubclass(value, BaseModel):
        setattr(tool, field, TypeExpr(call.loc, value))
    elif isinstance(value, dict):
        if mcp:
            setattr(tool, field, TypeExpr(call.loc, value))
        elif unknown_source:
            tool.refused.add(func)
        else:
            call.error(
                f"{func} takes a pydantic model class; JSON Schema dicts are only accepted "
                "for tools of FromExternalMCP toolsets"
            )
            tool.refused.add(func)
    elif isinstance(value, BaseModel):
        name = type(value).__name__
        call.error(
            f"{func} takes a pydantic model class, got an instance of {name}; pass the class "
            f"itself: {func}({name})",
            arg=(0, "value"),
        )
        tool.refused.add(func)
    else:
        shown = value.__name__ if isinstance(value, type) else type(value).__name__
        call.error(
            f"{func} takes a pydantic model class (a BaseModel subclass), got {shown}",
            arg=(0, "value"),
        )
        tool.refused.add(func)


def Args(value: Any) -> None:
    """The tool's payload type: a pydantic model (JSON Schema dict for external MCP tools)."""
    _set_type("Args", value)


def Return(value: Any) -> None:
    """The tool's result type: a pydantic model (JSON Schema dict for external MCP tools)."""
    _set_type("Return", value)


def MCPName(name: str) -> None:
    """The tool's name on its external MCP server, when the design names the tool otherwise.

    Design tool names become tool IDs and provider tool names, so they are restricted; MCP
    servers may name tools with dots, leading digits or underscores, or up to 128 characters
    (``files.read``). ``Tool("read_file", ..., lambda: MCPName("files.read"))`` keeps the
    design's name for models and calls ``files.read`` on the server.
    """
    call = begin("MCPName")
    tool = call.expect((ToolExpr,), "inside a Tool body")
    if tool is None:
        return
    toolset = tool.parent
    if isinstance(toolset, ToolsetExpr) and "source" in toolset.refused:
        return  # its refused source (reported) may have been FromExternalMCP
    if not (isinstance(toolset, ToolsetExpr) and isinstance(toolset.source, ExternalMCPSource)):
        call.error(
            f"MCPName is only valid for tools of FromExternalMCP toolsets ({tool.eval_name()} "
            "is not one): it names the tool on the MCP server"
        )
        return
    if call.repeated(tool, tool.eval_name()):
        return
    problem = mcp_server_name_problem(name)
    if problem is not None:
        call.error(problem)
        return
    tool.mcp_name = name
    tool.mcp_name_loc = call.loc


def Title(text: str) -> None:
    """A display title for a tool or a confirmation (tools default to the humanised name)."""
    call = begin("Title")
    scope = call.expect((ToolExpr, ConfirmationExpr), "inside a Tool or Confirmation body")
    if scope is not None and call.repeated(scope, scope.eval_name()):
        return
    value = call.text("text", text)
    if scope is None or value is None:
        return
    scope.title = value


def _describable(call: Call) -> Expr | None:
    scope = call.scope
    if isinstance(scope, UseExpr | ExportExpr):
        if scope.defines:
            return _defined_toolset(scope)
        call.error(
            "Description here would change a toolset other consumers share; describe it in "
            "its Toolset definition"
        )
        return None
    target = call.expect(
        (ServiceExpr, ToolsetExpr, ToolExpr, RegistryExpr),
        "inside a Service, Toolset, Tool or Registry body",
    )
    if isinstance(target, ToolsetExpr) and target.is_registry:
        # It was kept and written nowhere: consumers see what the provider publishes.
        call.error(
            f"registry toolset {q(target.name)} cannot be described here: its provider "
            "publishes its description"
        )
        return None
    return target


def Description(text: str) -> None:
    """Describe the enclosing service, toolset, tool or registry."""
    call = begin("Description")
    target = _describable(call)
    assert target is None or isinstance(target, ServiceExpr | ToolsetExpr | ToolExpr | RegistryExpr)
    # A description given before, by Description (refused or not) or by the Tool(...) call.
    first = call.repeat_of(target) if target is not None else None
    if target is not None and (first is not None or target.description is not None):
        given = first or target.loc
        call.error(
            f"description of {target.eval_name()} is already set (line {given.line}); keep one",
            related=(given,),
        )
        return
    value = call.text("text", text)
    if target is None or value is None:
        return
    target.description = value


def Tags(*tags: str) -> None:
    """Tags of a tool or a defining toolset; run policies filter on them."""
    call = begin("Tags")
    scope = call.scope
    target: ToolExpr | ToolsetExpr | None
    if isinstance(scope, UseExpr):
        target_expr = scope.target
        if isinstance(target_expr, RegistryExpr) or (
            isinstance(target_expr, ToolsetExpr) and target_expr.is_registry
        ):
            call.error(
                "Tags on a registry reference: tool tags belong to the provider; filter "
                "them with this agent's RunPolicy instead"
            )
            return
        if not scope.defines:
            call.error(
                "Tags in a Use would change a toolset other consumers share; declare tags on "
                "its Toolset or Tool, or filter with RunPolicy"
            )
            return
        target = _defined_toolset(scope)
    elif isinstance(scope, ExportExpr) and scope.defines:
        target = scope.toolset
    else:
        target = call.expect((ToolExpr, ToolsetExpr), "inside a Tool or Toolset body")
        if isinstance(target, ToolsetExpr) and target.is_registry:
            # They were kept and applied to nothing: a registry tool's tags are its provider's.
            call.error(
                f"Tags on registry toolset {q(target.name)}: tool tags belong to the provider; "
                "filter them with the consuming agent's RunPolicy instead"
            )
            return
    if target is None:
        if not tags:
            call.error("Tags needs at least one tag")
        return
    call.add_unique(target, target.tags, tags, "tag")


def RequiredLabels(*labels: str) -> None:
    """Run labels the tool needs (e.g. a tenant ID); runs without them fail at start."""
    call = begin("RequiredLabels")
    tool = call.expect((ToolExpr,), "inside a Tool body")
    if tool is None:
        if not labels:
            call.error("RequiredLabels needs at least one required label")
        return
    call.add_unique(tool, tool.required_labels, labels, "required label")


# --------------------------------------------------------------------------- confirmation


def Confirmation(*args: object) -> ConfirmationExpr:
    """Ask a human before the tool runs: ``PromptTemplate`` and ``DeniedResultTemplate`` inside.

    Templates are Jinja2, rendered against the canonical JSON argument names.
    """
    call = begin("Confirmation")
    values, body = call.split_body(args)
    if values:
        call.too_many(values, "only a body", 0)
    tool = call.expect((ToolExpr,), "inside a Tool body")
    expr = ConfirmationExpr(call.loc, tool)
    call.attach_once(tool, "confirmation", expr)
    return open_scope(call, expr, body)


def _confirmation_template(func: str, attr: str, template: str) -> None:
    call = begin(func)
    confirmation = call.expect((ConfirmationExpr,), "inside a Confirmation body")
    if call.repeated(confirmation, "this Confirmation"):
        return
    value = call.text("template", template)
    if confirmation is not None and value is None:
        confirmation.refused.add(func)
    if confirmation is None or value is None:
        return
    setattr(confirmation, f"{attr}_template", value)
    setattr(confirmation, f"{attr}_loc", call.loc)


def PromptTemplate(template: str) -> None:
    """The question shown to the approver (Jinja2 over the call's arguments)."""
    _confirmation_template("PromptTemplate", "prompt", template)


def DeniedResultTemplate(template: str) -> None:
    """The tool result the model sees when the approver says no (Jinja2 over the arguments)."""
    _confirmation_template("DeniedResultTemplate", "denied_result", template)


# --------------------------------------------------------------------------- bounded results


def BoundedResult(*args: object) -> BoundsExpr:
    """The tool returns a bounded slice of a larger result; ``Cursor``/``NextCursor`` configure
    paging and ``ContinueWith`` names the tool that fetches the next page."""
    call = begin("BoundedResult")
    values, body = call.split_body(args)
    if values:
        call.too_many(values, "only an optional body", 0)
    tool = call.expect((ToolExpr,), "inside a Tool body")
    expr = BoundsExpr(call.loc, tool)
    call.attach_once(tool, "bounds", expr)
    return open_scope(call, expr, body)


def _bounds_field(func: str, attr: str, field: str) -> None:
    call = begin(func)
    bounds = call.expect((BoundsExpr,), "inside a BoundedResult body")
    if call.repeated(bounds, "this BoundedResult"):
        return
    value = call.text("field name", field)
    if bounds is not None and value is None:
        bounds.refused.add(func)
    if bounds is None or value is None:
        return
    setattr(bounds, attr, value)
    setattr(bounds, f"{attr}_loc", call.loc)


def Cursor(field: str) -> None:
    """The optional string field of the tool's Args that carries the page cursor."""
    _bounds_field("Cursor", "cursor", field)


def NextCursor(field: str) -> None:
    """The optional string field of the tool's result that carries the next page's cursor."""
    _bounds_field("NextCursor", "next_cursor", field)


def ContinueWith(tool: str) -> None:
    """The tool (same toolset) that fetches further pages; it is never deferred."""
    call = begin("ContinueWith")
    bounds = call.expect((BoundsExpr,), "inside a BoundedResult body")
    if call.repeated(bounds, "this BoundedResult"):
        return
    value = call.text("tool name", tool)
    if bounds is not None and value is None:
        bounds.refused.add("ContinueWith")
    if bounds is None or value is None:
        return
    bounds.continue_with, bounds.continue_loc = value, call.loc


# --------------------------------------------------------------------------- server data


def ServerData(
    kind: str,
    schema: Any,
    description: str | None = None,
    *,
    audience: ServerDataAudience = "timeline",
) -> ServerDataExpr:
    """Data the tool returns for the application, never shown to the model."""
    call = begin("ServerData")
    tool = call.expect((ToolExpr,), "inside a Tool body")
    expr = ServerDataExpr(call.loc, tool, kind=kind if isinstance(kind, str) else "")
    if not isinstance(kind, str) or not kind:
        call.error("ServerData kind must be a non-empty string", arg=(0, "kind"))
    elif (surrogate := lone_surrogate(kind)) is not None:
        # The kind is written into generated code and the registry declaration.
        call.error(f"ServerData kind contains {surrogate}; remove it", arg=(0, "kind"))
    from pydantic import BaseModel

    if schema is None:
        call.error(f"ServerData({q(expr.kind)}) requires a schema type", arg=(1, "schema"))
    elif isinstance(schema, type) and issubclass(schema, BaseModel):
        expr.schema = TypeExpr(call.loc, schema)
    else:
        call.error(
            f"ServerData({q(expr.kind)}) schema must be a pydantic model class, got "
            f"{type(schema).__name__}",
            arg=(1, "schema"),
        )
    if description is not None:
        expr.description = call.text("description", description, arg=(2, "description"))
    if audience not in _AUDIENCES:
        call.error(
            f"ServerData({q(expr.kind)}) audience must be one of "
            f"{', '.join(_AUDIENCES)}; got {audience!r}",
            arg=(None, "audience"),
        )
    else:
        expr.audience = audience
    if tool is not None:
        tool.server_data.append(expr)
    return expr


__all__ = [
    "Args",
    "BoundedResult",
    "Confirmation",
    "ContinueWith",
    "Cursor",
    "DeniedResultTemplate",
    "Description",
    "FromExternalMCP",
    "MCPName",
    "NextCursor",
    "PromptTemplate",
    "RequiredLabels",
    "Return",
    "ServerData",
    "Tags",
    "Title",
    "Tool",
    "Toolset",
]
