"""Services, agents, and how agents consume and export toolsets."""

from __future__ import annotations

from agentgen.dsl.call import Invalid, begin, open_scope
from agentgen.dsl.expr import (
    AgentExpr,
    ExportExpr,
    LocalSource,
    RegistryExpr,
    ServiceExpr,
    ToolsetExpr,
    UseExpr,
)
from agentgen.dsl.names import q


def Service(name: str, *args: object) -> ServiceExpr:
    """Declare a service: the unit agents are grouped and generated under (``gen/<service>/``)."""
    call = begin("Service")
    values, body = call.split_body(args)
    if values and isinstance(values[0], str):
        call.error(
            f"Service takes a name and an optional body; a service's description goes in its "
            f"body: Service({q(name) if isinstance(name, str) else 'name'}, lambda: "
            f"Description({q(values[0])}))",
            arg=(1, None),
        )
    elif values:
        call.too_many(values, "a name and an optional body", 1)
    expr = ServiceExpr(call.loc, call.scope, name=name if isinstance(name, str) else "")
    call.name("service", name, arg=(0, "name"))
    if call.at_top_level():
        call.ctx.root.services.append(expr)
    return open_scope(call, expr, body)


def Agent(name: str, description: str, *args: object) -> AgentExpr:
    """Declare an agent of the enclosing service; its ID is ``service.agent``."""
    call = begin("Agent")
    values, body = call.split_body(args)
    if values:
        call.too_many(values, "a name, a description and an optional body", 2)
    service = call.expect((ServiceExpr,), "inside a Service body")
    expr = AgentExpr(call.loc, service, name=name if isinstance(name, str) else "")
    call.name("agent", name, arg=(0, "name"))
    if callable(description) and body is None:
        call.error("Agent needs a description before its body: Agent(name, description, body)")
        body = description
    else:
        expr.description = call.text("description", description, arg=(1, "description")) or ""
    if service is not None:
        service.agents.append(expr)
    return open_scope(call, expr, body)


def Use(used: ToolsetExpr | RegistryExpr | ExportExpr | str | None, *args: object) -> UseExpr:
    """Consume a toolset, a whole registry, or (with a name) a toolset defined right here.

    The body holds this consumer's choices: ``Deferred`` (what loads on demand), ``Version``
    (registry toolsets), ``Tool("name")`` subsets; for an inline toolset, its tools.
    """
    call = begin("Use")
    values, body = call.split_body(args)
    if values:
        call.too_many(values, "a toolset, registry or name, and an optional body", 1)
    agent = call.expect((AgentExpr,), "inside an Agent body")
    expr = UseExpr(call.loc, agent)
    value: object = used  # a design may pass anything; say what was wrong
    if isinstance(value, str):
        if call.name("toolset", value, arg=(0, "used")) is not None and agent is not None:
            toolset = ToolsetExpr(
                call.loc, agent, name=value, source=LocalSource(), owner="agent-use"
            )
            call.ctx.root.toolsets.append(toolset)
            expr.target = toolset
            expr.defines = True
    elif isinstance(value, ToolsetExpr | RegistryExpr):
        expr.target = value
    elif isinstance(value, ExportExpr):
        # ``with Export("analysis") as Analysis:`` hands out the export; use what it exports.
        # An export without a toolset was rejected (and reported) already.
        expr.target = value.toolset
    elif value is None:
        call.error("Use requires a toolset or a registry, got None")
    elif not isinstance(value, Invalid):
        call.error(
            "Use takes a Toolset(...) or Registry(...) expression, or a name to define a "
            f"toolset in place; got {type(value).__name__}"
        )
    if agent is not None and expr.target is not None:
        agent.uses.append(expr)
    return open_scope(call, expr, body)


def Export(exported: ToolsetExpr | str | None, *args: object) -> ExportExpr:
    """Export a toolset from an agent (its tools run the agent) or from a service.

    ``Export("name", body)`` defines the exported toolset in place; an agent only exports
    toolsets it defines this way (the tools it runs), a service may also export an existing
    ``Toolset``.
    """
    call = begin("Export")
    values, body = call.split_body(args)
    if values:
        call.too_many(values, "a toolset or name, and an optional body", 1)
    # A refused argument without a body may be the body written wrongly (see Toolset).
    rejected_body = bool(values) and body is None
    owner = call.expect((AgentExpr, ServiceExpr), "inside an Agent or Service body")
    expr = ExportExpr(call.loc, owner)
    value: object = exported  # a design may pass anything; say what was wrong
    if isinstance(value, str):
        if call.name("toolset", value, arg=(0, "exported")) is not None and owner is not None:
            toolset = ToolsetExpr(
                call.loc,
                owner,
                name=value,
                source=LocalSource(),
                owner="agent-export" if isinstance(owner, AgentExpr) else "service-export",
            )
            toolset.body_rejected = rejected_body
            call.ctx.root.toolsets.append(toolset)
            expr.toolset = toolset
            expr.defines = True
    elif isinstance(value, ToolsetExpr):
        if value.is_registry:
            call.error(
                f"registry toolset {q(value.name)} cannot be exported: the registry's provider "
                "owns its contract; export a toolset defined in this design instead"
            )
        elif isinstance(owner, AgentExpr):
            call.error(
                f"{owner.eval_name()} cannot export existing {value.eval_name()}: an agent "
                'exports tools it runs, defined in place with Export("name", body); to share '
                f"{value.eval_name()}, export it from a Service body instead"
            )
        else:
            expr.toolset = value
    elif isinstance(value, RegistryExpr):
        call.error(f"registry {q(value.name)} cannot be exported; export a toolset instead")
    elif value is None:
        call.error("Export requires a toolset, got None")
    elif not isinstance(value, Invalid):
        call.error(
            "Export takes a Toolset(...) expression, or a name to define a toolset in place; "
            f"got {type(value).__name__}"
        )
    if owner is not None and expr.toolset is not None:
        owner.exports.append(expr)
    return open_scope(call, expr, body)


__all__ = ["Agent", "Export", "Service", "Use"]
