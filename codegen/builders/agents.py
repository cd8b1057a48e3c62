"""Agent models: the toolsets each agent uses, its deferred IDs, registry reads and policy."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from agentgen.codegen.builders.names import (
    GENERATED_BY,
    agent_names,
    camel,
    subset_executor_class,
)
from agentgen.codegen.generation_model import (
    AgentModel,
    PolicyModel,
    RegistryRead,
    TagClauseModel,
    ToolsetModel,
    UsedToolset,
)
from agentgen.dsl.expr import AgentExpr, RegistryExpr, RegistrySource, ToolsetExpr
from agentgen.runtime.contracts.canonical import pretty_json
from agentgen.runtime.contracts.ids import agent_id, tool_id

__all__ = ["build_agent", "import_path"]


def build_agent(expr: AgentExpr, toolsets: Mapping[int, ToolsetModel]) -> AgentModel:
    """The model of an agent; ``toolsets`` holds the model of every toolset it compiles."""
    service = expr.service
    identifier = agent_id(service.name, expr.name)
    uses: list[UsedToolset] = []
    deferred: list[str] = []
    reads: list[RegistryRead] = []
    executors: list[str] = []
    for use in expr.uses:
        target = use.target
        if isinstance(target, RegistryExpr):
            reads.append(RegistryRead(target.name, None, "", use.defers_all))
            continue
        if not isinstance(target, ToolsetExpr):
            continue
        source = target.source
        if isinstance(source, RegistrySource):
            reads.append(
                RegistryRead(
                    source.registry.name,
                    source.toolset,
                    use.version.version if use.version else "",
                    use.defers_all,
                )
            )
            continue
        toolset = toolsets[id(target)]
        wanted = {t.name for t in use.resolved_tools}
        tools = tuple(t for t in toolset.tools if t.name in wanted)
        deferred.extend(tool_id(target.name, name) for name in use.resolved_deferred)
        if toolset.agent_id is not None:
            executors.append(toolset.agent_id)
        config_field = None
        if toolset.kind == "local":
            config_field = f"{toolset.name}_executor"
        elif toolset.kind == "mcp":
            config_field = f"{toolset.name}_mcp"
        subset = len(tools) != len(toolset.tools)
        uses.append(
            UsedToolset(
                toolset=toolset,
                tools=tools,
                import_path=import_path(service.name, toolset),
                alias=toolset.name,
                config_field=config_field,
                subset=subset,
                protocol=subset_executor_class(expr.name, toolset.name)
                if subset and toolset.kind == "local"
                else None,
            )
        )
    policy = expr.policy
    labels = sorted({label for used in uses for t in used.tools for label in t.required_labels})
    config_class, register_function = agent_names(expr.name)
    return AgentModel(
        name=expr.name,
        id=identifier,
        service=service.name,
        description=expr.description,
        package=(service.name, "agents", expr.name),
        prefix=camel(expr.name),
        uses=tuple(uses),
        deferred_ids=tuple(sorted(deferred)),
        registry_reads=tuple(reads),
        policy=PolicyModel(
            policy.max_tool_calls,
            policy.max_consecutive_failed_tool_calls,
            tuple(TagClauseModel(c.allowed_any, c.denied_any) for c in policy.tag_clauses),
            policy.model_timeout,
        )
        if policy is not None
        else PolicyModel(),
        required_labels=tuple(labels),
        agent_executors=tuple(sorted(set(executors))),
        tool_schemas_json=tool_schemas_json(identifier, service.name, uses),
        config_class=config_class,
        register_function=register_function,
    )


def import_path(service: str, toolset: ToolsetModel) -> str:
    """Relative import of a toolset package from modules of an agent package
    (``<root>/<service>/agents/<agent>/``)."""
    if toolset.service == service:
        return "..." + ".".join(toolset.package[1:])
    return "...." + ".".join(toolset.package)


def tool_schemas_json(identifier: str, service: str, uses: Iterable[UsedToolset]) -> str | None:
    tools: list[dict[str, Any]] = []
    for used in uses:
        for tool in used.tools:
            entry: dict[str, Any] = {
                "id": tool.id,
                "service": service,
                "toolset": used.toolset.registration_name,
                "title": tool.title,
                "description": tool.description,
            }
            if tool.tags:
                entry["tags"] = list(tool.tags)
            entry["kind"] = tool.kind
            if tool.confirmation is not None:
                confirmation: dict[str, Any] = {}
                if tool.confirmation.title:
                    confirmation["title"] = tool.confirmation.title
                confirmation["prompt_template"] = tool.confirmation.prompt_template
                confirmation["denied_result_template"] = tool.confirmation.denied_result_template
                entry["confirmation"] = confirmation
            entry["payload"] = {
                "name": tool.payload.class_name,
                "schema": json.loads(tool.payload.schema_json),
            }
            entry["result"] = {
                "name": tool.result.class_name,
                "schema": json.loads(tool.result.schema_json),
            }
            if tool.server_data:
                entry["server_data"] = [
                    {
                        "kind": d.kind,
                        "audience": d.audience,
                        **({"description": d.description} if d.description else {}),
                        "schema": json.loads(d.schema_json),
                    }
                    for d in tool.server_data
                ]
            tools.append(entry)
    if not tools:
        return None
    document = {"generated_by": GENERATED_BY, "agent": identifier, "tools": tools}
    return pretty_json(document) + "\n"
