"""Toolset and tool models: IDs, titles, search documents, paging, declarations, fingerprints."""

from __future__ import annotations

import json
from typing import Any

from agentgen.codegen.builders.names import camel, tool_constant
from agentgen.codegen.builders.owners import toolset_kind
from agentgen.codegen.builders.types import ToolsetTypes, ToolTypes
from agentgen.codegen.generation_model import ToolModel, ToolsetKind, ToolsetModel
from agentgen.dsl.expr import AgentExpr, ExternalMCPSource, ServiceExpr, ToolExpr, ToolsetExpr
from agentgen.dsl.names import python_identifier
from agentgen.dsl.validate import continuation_tools
from agentgen.runtime.contracts.fingerprint import schema_fingerprint
from agentgen.runtime.contracts.ids import agent_id, humanize_title, registration_name, tool_id
from agentgen.runtime.contracts.specs import BoundsSpec, ConfirmationSpec, PagingSpec
from agentgen.runtime.contracts.wire import tool_schema_json
from agentgen.runtime.search.document import search_document

__all__ = ["build_toolset", "declared_toolset", "tool_declaration"]


def build_toolset(expr: ToolsetExpr, owner: ServiceExpr, types: ToolsetTypes) -> ToolsetModel:
    """The model of a toolset whose every type was checked (``types`` has each tool)."""
    return declared_toolset(expr, owner, types)[0]


def declared_toolset(
    expr: ToolsetExpr, owner: ServiceExpr, types: ToolsetTypes
) -> tuple[ToolsetModel, list[dict[str, Any]]]:
    """The model of a toolset, and the registry declaration of each of its tools (wire JSON,
    in the order of ``model.tools``): the model's fingerprint is computed from them, and the
    checker validates them; computed once for both (they are half the cost of building)."""
    registration = registration_name(owner.name, expr.name)
    kind: ToolsetKind = toolset_kind(expr)  # type: ignore[assignment]
    exporter = expr.parent
    exporter_id = (
        agent_id(exporter.service.name, exporter.name)
        if kind == "agent" and isinstance(exporter, AgentExpr)
        else None
    )
    partners = continuation_tools(expr)
    tools = tuple(
        _tool(expr, tool, types.tools[tool.name], partners, exporter_id) for tool in expr.tools
    )
    declarations = [tool_declaration(t) for t in tools]
    declaration = {"name": registration, "tools": declarations}
    module = types.module
    source = expr.source
    model = ToolsetModel(
        name=expr.name,
        service=owner.name,
        registration_name=registration,
        package=(owner.name, "toolsets", expr.name),
        description=expr.description,
        tags=tuple(expr.tags),
        tools=tools,
        kind=kind,
        classes=tuple(module.classes),
        imports=tuple(sorted(module.imports)),
        pydantic_names=tuple(sorted(module.pydantic_names)),
        typing_names=tuple(sorted(module.typing_names)),
        pydantic_module=module.pydantic_module,
        rebuild=tuple(module.rebuild),
        fingerprint=schema_fingerprint(declaration),
        prefix=camel(expr.name),
        mcp_service=source.service if isinstance(source, ExternalMCPSource) else None,
        mcp_toolset=source.toolset if isinstance(source, ExternalMCPSource) else None,
        agent_id=exporter_id,
        publish_to=tuple(registry.name for registry, _ in expr.publish_to),
        types_module=types.types_module,
    )
    return model, declarations


def _tool(
    toolset: ToolsetExpr,
    expr: ToolExpr,
    types: ToolTypes,
    partners: dict[str, str],
    exporter_id: str | None,
) -> ToolModel:
    identifier = tool_id(toolset.name, expr.name)
    title = expr.title or humanize_title(expr.name)
    description = expr.description or ""
    paging: PagingSpec | None = None
    bounds = expr.bounds
    if bounds is not None and bounds.cursor is not None and bounds.next_cursor is not None:
        paging = PagingSpec(
            cursor_field=bounds.cursor,
            next_cursor_field=bounds.next_cursor,
            continue_tool=tool_id(toolset.name, bounds.continue_with)
            if bounds.continue_with
            else None,
            source_tool=tool_id(toolset.name, partners[expr.name])
            if expr.name in partners
            else None,
        )
    confirmation = expr.confirmation
    method = python_identifier(expr.name)
    return ToolModel(
        name=expr.name,
        id=identifier,
        const=tool_constant(method),
        method=method,
        title=title,
        description=description,
        tags=toolset.tool_tags(expr),
        payload=types.payload,
        result=types.result,
        search=search_document(
            identifier, title, description, json.loads(types.payload.schema_json)
        ),
        kind="agent" if exporter_id else "service",
        agent_id=exporter_id,
        confirmation=ConfirmationSpec(
            confirmation.prompt_template or "",
            confirmation.denied_result_template or "",
            confirmation.title,
        )
        if confirmation is not None
        else None,
        bounded=bounds is not None,
        paging=paging,
        server_data=types.server_data,
        required_labels=tuple(expr.required_labels),
        server_name=expr.server_name,
    )


def tool_declaration(tool: ToolModel) -> dict[str, Any]:
    """The tool's registry declaration (wire JSON), built by the runtime's own function, from
    the same spec values the generated ``specs.py`` prints."""
    return tool_schema_json(
        tool_id=tool.id,
        title=tool.title,
        description=tool.description,
        tags=tool.tags,
        payload_schema=json.loads(tool.payload.schema_json),
        payload_name=tool.payload.class_name,
        result_schema=json.loads(tool.result.schema_json),
        result_name=tool.result.class_name,
        search=tool.search,
        kind=tool.kind,
        agent_id=tool.agent_id,
        confirmation=tool.confirmation,
        bounds=BoundsSpec(tool.paging) if tool.bounded else None,
        server_data=tool.server_data,
        server_data_schemas=[json.loads(d.schema_json) for d in tool.server_data],
        required_labels=tool.required_labels,
    )
