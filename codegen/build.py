"""From a validated design to the generation model.

Decides what the templates print: which service owns each toolset, package paths and import
paths, tool IDs, titles, JSON Schemas, search documents, fingerprints, deferred ID lists and
registry reads. Types the generated code cannot reproduce are design errors that name the model
and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import BaseModel

from agentgen.codegen.model import (
    AgentModel,
    ConfirmationModel,
    GenerationModel,
    PagingModel,
    PolicyModel,
    RegistryRead,
    ServerDataModel,
    ServiceModel,
    TagClauseModel,
    ToolModel,
    ToolsetModel,
    TypeRef,
    UsedToolset,
)
from agentgen.codegen.pytypes import TypeModule, UnsupportedType
from agentgen.dsl.errors import DesignError, DesignErrors
from agentgen.dsl.expr import (
    AgentExpr,
    ExternalMCPSource,
    RegistryExpr,
    RegistrySource,
    RootExpr,
    ServiceExpr,
    ToolExpr,
    ToolsetExpr,
    TypeExpr,
)
from agentgen.dsl.names import python_identifier, q
from agentgen.dsl.types import Mode, model_schema, prefetch_schemas
from agentgen.dsl.validate import continuation_tools
from agentgen.runtime.canonical import compact_json, pretty_json
from agentgen.runtime.contract import tool_schema_json
from agentgen.runtime.fingerprint import schema_fingerprint
from agentgen.runtime.ids import agent_id, humanize_title, registration_name, tool_id
from agentgen.runtime.search_document import SearchDocument, search_text
from agentgen.runtime.specs import BoundsSpec, ConfirmationSpec, PagingSpec, ServerDataSpec
from agentgen.runtime.types import JSON_SCHEMA_DIALECT, empty_payload_schema, null_result_schema

GENERATED_BY = "agentgen — do not edit"


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in python_identifier(name).split("_"))


def json_schema(
    model: type[BaseModel], mode: Literal["validation", "serialization"]
) -> dict[str, Any]:
    return {"$schema": JSON_SCHEMA_DIALECT, **model_schema(model, mode)}


@dataclass
class _Builder:
    root: RootExpr
    errors: list[DesignError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    owners: dict[int, ServiceExpr] = field(default_factory=dict)
    toolsets: dict[int, ToolsetModel] = field(default_factory=dict)

    # ------------------------------------------------------------------ ownership

    def assign_owners(self) -> None:
        """The service that owns a toolset's package and registration name: the defining
        agent's service for toolsets declared in an agent, else the first service that uses
        or exports it."""
        for toolset in self.root.toolsets:
            parent = toolset.parent
            if isinstance(parent, AgentExpr):
                self.owners[id(toolset)] = parent.service
            elif isinstance(parent, ServiceExpr):
                self.owners[id(toolset)] = parent
        for service in self.root.services:
            referenced = (
                [e.toolset for e in service.exports]
                + [use.target for agent in service.agents for use in agent.uses]
                + [e.toolset for agent in service.agents for e in agent.exports]
            )
            for target in referenced:
                if isinstance(target, ToolsetExpr) and not target.is_registry:
                    self.owners.setdefault(id(target), service)
        for toolset in self.root.toolsets:
            if id(toolset) not in self.owners and not toolset.is_registry:
                self.warnings.append(
                    f"{toolset.loc.short()}: toolset {q(toolset.name)} is not used or exported "
                    "by any service; nothing is generated for it"
                )

    # ------------------------------------------------------------------ types

    def type_ref(
        self, module: TypeModule, expr: TypeExpr | None, *, result: bool, tool: ToolExpr
    ) -> TypeRef | None:
        if expr is None:
            if result:
                return TypeRef("null", None, compact_json(null_result_schema()), "None")
            return TypeRef("empty", None, compact_json(empty_payload_schema()), "EmptyPayload")
        value = expr.value
        if isinstance(value, dict):
            schema = {"$schema": JSON_SCHEMA_DIALECT, **value}
            return TypeRef("schema", None, compact_json(schema), "Any")
        func = "Return" if result else "Args"
        known = len(module.problems)
        try:
            name = module.add_model(value)
        except UnsupportedType as exc:
            module.problems.append(exc)
        if len(module.problems) > known:
            for problem in module.problems[known:]:
                self.errors.append(DesignError(expr.loc, tool.where(), f"{func} {problem}"))
            return None
        try:
            schema = json_schema(value, "serialization" if result else "validation")
        except Exception as exc:  # pydantic's schema generation raises several types
            self.errors.append(
                DesignError(
                    expr.loc,
                    tool.where(),
                    f"{func} model {value.__qualname__} has no JSON Schema: "
                    f"{str(exc).splitlines()[0]}",
                )
            )
            return None
        return TypeRef("model", name, compact_json(schema), f"types.{name}")

    # ------------------------------------------------------------------ toolsets

    def toolset(self, expr: ToolsetExpr) -> ToolsetModel | None:
        key = id(expr)
        if key in self.toolsets:
            return self.toolsets[key]
        if expr.is_registry:
            return None
        # A toolset no service owns is still checked (its types must be generatable), under a
        # placeholder owner; nothing of it is written.
        owner = self.owners.get(key)
        service_name = owner.name if owner is not None else "_"
        registration = registration_name(service_name, expr.name)
        exporter = expr.parent if expr.owner == "agent-export" else None
        exporter_id = (
            agent_id(exporter.service.name, exporter.name)
            if isinstance(exporter, AgentExpr)
            else None
        )
        module = TypeModule()
        partners = continuation_tools(expr)
        tools: list[ToolModel] = []
        for tool in expr.tools:
            tool_model = self.tool(module, expr, tool, partners, exporter_id)
            if tool_model is not None:
                tools.append(tool_model)
        if isinstance(expr.source, ExternalMCPSource):
            kind: Any = "mcp"
        elif exporter_id is not None:
            kind = "agent"
        else:
            kind = "local"
        declaration = {"name": registration, "tools": [self.declaration(t) for t in tools]}
        model = ToolsetModel(
            name=expr.name,
            service=service_name,
            registration_name=registration,
            package=(service_name, "toolsets", expr.name),
            description=expr.description,
            tags=tuple(expr.tags),
            tools=tuple(tools),
            kind=kind,
            classes=tuple(module.classes),
            imports=tuple(sorted(module.imports)),
            pydantic_names=tuple(sorted(module.pydantic_names)),
            typing_names=tuple(sorted(module.typing_names)),
            rebuild=tuple(module.rebuild),
            fingerprint=schema_fingerprint(declaration),
            prefix=camel(expr.name),
            mcp_service=expr.source.service if isinstance(expr.source, ExternalMCPSource) else None,
            mcp_toolset=expr.source.toolset if isinstance(expr.source, ExternalMCPSource) else None,
            agent_id=exporter_id,
        )
        self.toolsets[key] = model
        return model

    def tool(
        self,
        module: TypeModule,
        toolset: ToolsetExpr,
        expr: ToolExpr,
        partners: dict[str, str],
        exporter_id: str | None,
    ) -> ToolModel | None:
        payload = self.type_ref(module, expr.args, result=False, tool=expr)
        result = self.type_ref(module, expr.result, result=True, tool=expr)
        if payload is None or result is None:
            return None
        identifier = tool_id(toolset.name, expr.name)
        title = expr.title or humanize_title(expr.name)
        description = expr.description or ""
        paging: PagingModel | None = None
        bounds = expr.bounds
        if bounds is not None and bounds.cursor is not None and bounds.next_cursor is not None:
            paging = PagingModel(
                cursor_field=bounds.cursor,
                next_cursor_field=bounds.next_cursor,
                continue_tool=tool_id(toolset.name, bounds.continue_with)
                if bounds.continue_with
                else None,
                source_tool=tool_id(toolset.name, partners[expr.name])
                if expr.name in partners
                else None,
            )
        server_data: list[ServerDataModel] = []
        for data in expr.server_data:
            assert data.schema is not None
            try:
                schema = json_schema(data.schema.value, "serialization")
            except Exception as exc:
                self.errors.append(
                    DesignError(
                        data.loc, data.where(), f"ServerData schema has no JSON Schema: {exc}"
                    )
                )
                continue
            server_data.append(
                ServerDataModel(data.kind, data.audience, data.description, compact_json(schema))
            )
        confirmation = expr.confirmation
        method = python_identifier(expr.name)
        return ToolModel(
            name=expr.name,
            id=identifier,
            const=method.upper(),
            method=method,
            title=title,
            description=description,
            tags=tuple(expr.tags),
            payload=payload,
            result=result,
            search=SearchDocument.from_text(search_text(identifier, title, description)),
            kind="agent" if exporter_id else "service",
            agent_id=exporter_id,
            confirmation=ConfirmationModel(
                confirmation.prompt_template or "",
                confirmation.denied_result_template or "",
                confirmation.title,
            )
            if confirmation is not None
            else None,
            bounded=bounds is not None,
            paging=paging,
            server_data=tuple(server_data),
            required_labels=tuple(expr.required_labels),
        )

    def declaration(self, tool: ToolModel) -> dict[str, Any]:
        """The tool's registry declaration (wire JSON), built by the runtime's own function."""
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
            confirmation=ConfirmationSpec(
                tool.confirmation.prompt_template,
                tool.confirmation.denied_result_template,
                tool.confirmation.title,
            )
            if tool.confirmation
            else None,
            bounds=BoundsSpec(
                PagingSpec(
                    tool.paging.cursor_field,
                    tool.paging.next_cursor_field,
                    tool.paging.continue_tool,
                    tool.paging.source_tool,
                )
                if tool.paging
                else None
            )
            if tool.bounded
            else None,
            server_data=[
                ServerDataSpec(d.kind, d.audience, d.schema_json, d.description)  # type: ignore[arg-type]
                for d in tool.server_data
            ],
            server_data_schemas=[json.loads(d.schema_json) for d in tool.server_data],
            required_labels=tool.required_labels,
        )

    # ------------------------------------------------------------------ agents

    def agent(self, expr: AgentExpr) -> AgentModel:
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
            toolset = self.toolset(target)
            if toolset is None:
                continue
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
            uses.append(
                UsedToolset(
                    toolset=toolset,
                    tools=tools,
                    import_path=self.import_path(service.name, toolset),
                    alias=toolset.name,
                    config_field=config_field,
                    subset=len(tools) != len(toolset.tools),
                )
            )
        policy = expr.policy
        labels = sorted({label for used in uses for t in used.tools for label in t.required_labels})
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
            )
            if policy is not None
            else PolicyModel(),
            required_labels=tuple(labels),
            agent_executors=tuple(sorted(set(executors))),
            tool_schemas_json=self.tool_schemas_json(identifier, service.name, uses),
        )

    @staticmethod
    def import_path(service: str, toolset: ToolsetModel) -> str:
        """Relative import of a toolset package from modules of an agent package
        (``<root>/<service>/agents/<agent>/``)."""
        if toolset.service == service:
            return "..." + ".".join(toolset.package[1:])
        return "...." + ".".join(toolset.package)

    @staticmethod
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
                    confirmation["denied_result_template"] = (
                        tool.confirmation.denied_result_template
                    )
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


def build(root: RootExpr) -> GenerationModel:
    """The generation model of a validated design. Raises :class:`DesignErrors`."""
    builder = _Builder(root)
    builder.assign_owners()
    wanted: list[tuple[type[BaseModel], Mode]] = []
    for toolset in root.toolsets:
        for tool in toolset.tools:
            for expr, mode in (
                (tool.args, "validation"),
                (tool.result, "serialization"),
                *((d.schema, "serialization") for d in tool.server_data),
            ):
                value = expr.value if expr is not None else None
                if isinstance(value, type) and issubclass(value, BaseModel):
                    wanted.append((value, cast(Mode, mode)))
    prefetch_schemas(wanted)
    for toolset in root.toolsets:
        builder.toolset(toolset)
    services: list[ServiceModel] = []
    for service in root.services:
        owned = [
            builder.toolset(t)
            for t in root.toolsets
            if builder.owners.get(id(t)) is service and not t.is_registry
        ]
        agents = [builder.agent(a) for a in service.agents]
        services.append(
            ServiceModel(service.name, tuple(t for t in owned if t is not None), tuple(agents))
        )
    if builder.errors:
        raise DesignErrors(builder.errors)
    design_name = root.file.replace("\\", "/").rsplit("/", 1)[-1]
    return GenerationModel(design_name, tuple(services), tuple(builder.warnings))
