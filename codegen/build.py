"""From a validated design to the generation model.

Decides what the templates print: which service owns each toolset, package paths and import
paths, tool IDs, titles, JSON Schemas, search documents, fingerprints, deferred ID lists and
registry reads. Types the generated code cannot reproduce are design errors that name the model
and the field.
"""

from __future__ import annotations

import contextlib
import json
import math
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
    RegistryModel,
    RegistryRead,
    RetryModel,
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
    UseExpr,
)
from agentgen.dsl.names import python_identifier, q
from agentgen.dsl.types import Mode, model_schema, prefetch_schemas
from agentgen.dsl.validate import DEFAULT_API_VERSION, continuation_tools, finalize
from agentgen.runtime.adapters.names import provider_name
from agentgen.runtime.contracts.canonical import compact_json, pretty_json
from agentgen.runtime.contracts.fingerprint import schema_fingerprint
from agentgen.runtime.contracts.ids import agent_id, humanize_title, registration_name, tool_id
from agentgen.runtime.contracts.schemas import (
    JSON_SCHEMA_DIALECT,
    empty_payload_schema,
    null_result_schema,
)
from agentgen.runtime.contracts.specs import (
    BoundsSpec,
    ConfirmationSpec,
    PagingSpec,
    ServerDataSpec,
)
from agentgen.runtime.contracts.wire import tool_schema_json
from agentgen.runtime.search.document import SearchDocument, search_text

GENERATED_BY = "agentgen — do not edit"

#: Module-level names of a toolset's generated ``specs.py`` that tool constants must not take.
SPECS_MODULE_NAMES = frozenset(
    {"TOOLSET", "DESCRIPTION", "TAGS", "AGENT_ID", "MCP_TOOL_NAMES", "SPECS", "NAMES", "SPEC",
     "TYPES"}
)  # fmt: skip
#: The generated root module holding the registry settings (a service cannot take its name).
REGISTRIES_MODULE = "registries"
#: The result of an agent tool declared without ``Return``: the agent's final text.
AGENT_TEXT_RESULT_SCHEMA = {"$schema": JSON_SCHEMA_DIALECT, "type": "string"}


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in python_identifier(name).split("_"))


def tool_constant(method: str) -> str:
    """The constant holding a tool's ID in ``specs.py`` (its spec is ``<constant>_SPEC``).

    The upper-cased method name, with ``_TOOL`` appended when it would take a name of the
    module (``TOOLSET``), end like another tool's spec (``X_SPEC``) or end like a suffixed
    constant (``X_TOOL``): distinct tools always get distinct names, whatever else the
    toolset declares.
    """
    base = method.upper()
    if base in SPECS_MODULE_NAMES or base.endswith(("_SPEC", "_TOOL")):
        return f"{base}_TOOL"
    return base


def _json_problem(value: Any, path: str = "") -> str | None:
    """Why ``value`` is not JSON (first problem found), or None."""
    where = f" at {path}" if path else ""
    if value is None or isinstance(value, bool | int | str):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"the number {value!r}{where} is not finite"
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = _json_problem(item, f"{path}/{index}")
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"the key {key!r}{where} is a {type(key).__name__}, not a string"
            problem = _json_problem(item, f"{path}/{key}")
            if problem is not None:
                return problem
        return None
    return (
        f"the value{where} is a {type(value).__name__} (JSON has objects with string keys, "
        "lists, strings, numbers, booleans and null)"
    )


def _references(value: Any, path: str = "") -> Iterable[tuple[str, str]]:
    """Every ``$ref``/``$dynamicRef`` string of a schema, with where it is."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("$ref", "$dynamicRef") and isinstance(item, str):
                yield f"{path}/{key}", item
            else:
                yield from _references(item, f"{path}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _references(item, f"{path}/{index}")


def _resolves(schema: dict[str, Any], pointer: str) -> bool:
    node: Any = schema
    for token in pointer.split("/")[1:]:
        part = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True


def schema_problems(value: dict[str, Any], *, payload: bool) -> list[str]:
    """Why a JSON Schema dict given to ``Args``/``Return`` cannot be a tool contract."""
    # Imported here, like the runtime does: only designs with JSON Schema dicts need it.
    import jsonschema  # type: ignore[import-untyped, unused-ignore]

    problem = _json_problem(value)
    if problem is not None:
        return [f"is not JSON: {problem}"]
    problems: list[str] = []
    dialect = value.get("$schema", JSON_SCHEMA_DIALECT)
    if dialect != JSON_SCHEMA_DIALECT:
        problems.append(
            f"declares $schema {q(str(dialect))}; tool contracts are JSON Schema 2020-12 "
            f"({JSON_SCHEMA_DIALECT}): remove $schema or use that one"
        )
    try:
        jsonschema.Draft202012Validator.check_schema(value)
    except jsonschema.SchemaError as exc:
        at = "/".join(str(p) for p in exc.absolute_path)
        problems.append(
            f"is not a valid JSON Schema (2020-12): {exc.message}" + (f" (at /{at})" if at else "")
        )
    else:
        if payload and value.get("type") != "object":
            problems.append(
                'must describe an object ("type": "object"): tool arguments are a JSON object'
            )
    for where, ref in _references(value):
        if not ref.startswith("#"):
            problems.append(
                f"refers to {q(ref)} (at {where}), outside the schema: references must be "
                'local ("#/$defs/...") since nothing is fetched'
            )
        elif ref.startswith("#/") and not _resolves(value, ref[1:]):
            problems.append(f"refers to {q(ref)} (at {where}), which the schema does not define")
    return problems


def json_schema(
    model: type[BaseModel], mode: Literal["validation", "serialization"]
) -> dict[str, Any]:
    return {"$schema": JSON_SCHEMA_DIALECT, **model_schema(model, mode)}


def type_problems(
    module: TypeModule, expr: TypeExpr, *, result: bool, tool: ToolExpr
) -> list[DesignError]:
    """Why a tool's ``Args`` (or ``Return``) type cannot be generated: fields the generated
    model cannot reproduce, or a JSON Schema dict that is no valid contract."""
    func = "Return" if result else "Args"
    value = expr.value
    if isinstance(value, dict):
        return [
            DesignError(expr.loc, tool.where(), f"{func} JSON Schema {problem}")
            for problem in schema_problems(value, payload=not result)
        ]
    known = len(module.problems)
    try:
        module.add_model(value)
    except UnsupportedType as exc:
        module.problems.append(exc)
    return [
        DesignError(expr.loc, tool.where(), f"{func} {problem}")
        for problem in module.problems[known:]
    ]


def build_errors(root: RootExpr) -> list[DesignError]:
    """What :func:`build` reports about a design that broke DSL rules (its partial tree):
    types that cannot be generated, names that collide in generated code or provider
    requests, so that one run reports every kind of problem together.

    The tree is finalized first (what each consumer compiles is resolved, as for a valid
    design); parts the DSL errors left inconsistent are skipped rather than checked.
    """
    finalize(root)
    builder = _Builder(root, partial=True)
    builder.run()
    return builder.errors


@dataclass
class _Builder:
    root: RootExpr
    #: The tree broke DSL rules: a part the builder cannot read is skipped (its DSL errors
    #: are reported) instead of failing the whole check.
    partial: bool = False
    errors: list[DesignError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    owners: dict[int, ServiceExpr] = field(default_factory=dict)
    toolsets: dict[int, ToolsetModel] = field(default_factory=dict)

    def step(self) -> contextlib.AbstractContextManager[object]:
        return contextlib.suppress(Exception) if self.partial else contextlib.nullcontext()

    # ------------------------------------------------------------------ ownership

    def assign_owners(self) -> None:
        """The service that owns a toolset's package and registration name: the defining
        agent's (or service's) service for toolsets declared in place; else the first service
        that exports it; else the first service whose agents use it. Reordering services
        never moves a toolset away from the service that exports it."""
        for toolset in self.root.toolsets:
            parent = toolset.parent
            if isinstance(parent, AgentExpr):
                self.owners[id(toolset)] = parent.service
            elif isinstance(parent, ServiceExpr):
                self.owners[id(toolset)] = parent
        exported = [(s, e.toolset) for s in self.root.services for e in s.exports]
        used = [
            (service, use.target)
            for service in self.root.services
            for agent in service.agents
            for use in agent.uses
        ]
        for service, target in [*exported, *used]:
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
        self,
        module: TypeModule,
        expr: TypeExpr | None,
        *,
        result: bool,
        tool: ToolExpr,
        types_module: str = "types",
    ) -> TypeRef | None:
        if expr is None:
            if result:
                return TypeRef("null", None, compact_json(null_result_schema()), "None")
            return TypeRef("empty", None, compact_json(empty_payload_schema()), "EmptyPayload")
        problems = type_problems(module, expr, result=result, tool=tool)
        if problems:
            self.errors.extend(problems)
            return None
        value = expr.value
        if isinstance(value, dict):
            schema = {"$schema": JSON_SCHEMA_DIALECT, **value}
            return TypeRef("schema", None, compact_json(schema), "Any")
        func = "Return" if result else "Args"
        name = module.add_model(value)  # added already: returns its name in the module
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
        return TypeRef("model", name, compact_json(schema), f"{types_module}.{name}")

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
        # The executor protocol annotates its methods with ``types.X``; a method named
        # ``types`` would shadow the module there, which is then imported as ``_types``.
        methods = {python_identifier(tool.name) for tool in expr.tools}
        types_module = "_types" if "types" in methods else "types"
        tools: list[ToolModel] = []
        for tool in expr.tools:
            tool_model = self.tool(module, expr, tool, partners, exporter_id, types_module)
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
            pydantic_module=module.pydantic_module,
            rebuild=tuple(module.rebuild),
            fingerprint=schema_fingerprint(declaration),
            prefix=camel(expr.name),
            mcp_service=expr.source.service if isinstance(expr.source, ExternalMCPSource) else None,
            mcp_toolset=expr.source.toolset if isinstance(expr.source, ExternalMCPSource) else None,
            agent_id=exporter_id,
            publish_to=tuple(registry.name for registry, _ in expr.publish_to),
            types_module=types_module,
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
        types_module: str,
    ) -> ToolModel | None:
        payload = self.type_ref(
            module, expr.args, result=False, tool=expr, types_module=types_module
        )
        result: TypeRef | None
        if expr.result is None and exporter_id is not None:
            # An agent tool without Return answers with the agent's final text.
            result = TypeRef("schema", None, compact_json(AGENT_TEXT_RESULT_SCHEMA), "str")
        else:
            result = self.type_ref(
                module, expr.result, result=True, tool=expr, types_module=types_module
            )
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
            const=tool_constant(method),
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
        #: Provider name → the tool sent under it; executor class → the toolset defining it.
        sent: dict[str, str] = {}
        classes: dict[str, str] = {}
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
            self.check_names(identifier, use, toolset, tools, sent, classes)
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

    def check_names(
        self,
        identifier: str,
        use: UseExpr,
        toolset: ToolsetModel,
        tools: Iterable[ToolModel],
        sent: dict[str, str],
        classes: dict[str, str],
    ) -> None:
        """Names that must stay distinct within one agent: what models see of its tools
        (sanitised provider names) and the executor classes its config imports together."""
        for tool in tools:
            name = provider_name(tool.id)
            other = sent.setdefault(name, tool.id)
            if other != tool.id:
                self.errors.append(
                    DesignError(
                        use.loc,
                        use.where(),
                        f"tools {q(other)} and {q(tool.id)} of agent {q(identifier)} are both "
                        f"sent to models as {q(name)} (provider names replace '.' and every "
                        "character outside [A-Za-z0-9_-] with '_'), so a call to one could not "
                        "be told from a call to the other; rename one of the tools or toolsets",
                    )
                )
        if toolset.kind != "local":
            return
        executor = f"{toolset.prefix}Executor"
        owner = classes.setdefault(executor, toolset.name)
        if owner != toolset.name:
            self.errors.append(
                DesignError(
                    use.loc,
                    use.where(),
                    f"toolsets {q(owner)} and {q(toolset.name)} both generate the executor "
                    f"class {executor}, which the config of agent {q(identifier)} imports "
                    "together; rename one of the toolsets",
                )
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

    # ------------------------------------------------------------------ design

    def run(self) -> tuple[tuple[ServiceModel, ...], tuple[RegistryModel, ...]]:
        """Build every service and registry, collecting design errors in ``errors``."""
        root = self.root
        self.assign_owners()
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
        with self.step():
            prefetch_schemas(wanted)
        for toolset in root.toolsets:
            with self.step():
                self.toolset(toolset)
        services: list[ServiceModel] = []
        for service in root.services:
            owned = [
                self.toolsets.get(id(t))
                for t in root.toolsets
                if self.owners.get(id(t)) is service and not t.is_registry
            ]
            agents: list[AgentModel] = []
            for agent in service.agents:
                with self.step():
                    agents.append(self.agent(agent))
            services.append(
                ServiceModel(service.name, tuple(t for t in owned if t is not None), tuple(agents))
            )
        registries: list[RegistryModel] = []
        for registry in root.registries:
            with self.step():
                registries.append(registry_model(registry))
        if root.registries:
            for service in root.services:
                if service.name == REGISTRIES_MODULE:
                    self.errors.append(
                        DesignError(
                            service.loc,
                            service.where(),
                            f"service name {q(service.name)} is taken by the generated module "
                            f"{REGISTRIES_MODULE}.py that holds the settings of the design's "
                            "registries; rename the service",
                        )
                    )
        return tuple(services), tuple(registries)


def build(root: RootExpr) -> GenerationModel:
    """The generation model of a validated design. Raises :class:`DesignErrors`."""
    builder = _Builder(root)
    services, registries = builder.run()
    if builder.errors:
        raise DesignErrors(builder.errors)
    design_name = root.file.replace("\\", "/").rsplit("/", 1)[-1]
    return GenerationModel(design_name, services, tuple(builder.warnings), registries)


def registry_model(registry: RegistryExpr) -> RegistryModel:
    """The settings of a declared registry, as the generated ``registries.py`` prints them."""
    retry = registry.retry
    return RegistryModel(
        name=registry.name,
        url=registry.url or "",
        api_version=registry.api_version or DEFAULT_API_VERSION,
        description=registry.description,
        timeout=registry.timeout,
        sync_interval=registry.sync_interval,
        cache_ttl=registry.cache_ttl,
        retry=RetryModel(retry.max_retries, retry.backoff_base, retry.backoff_max)
        if retry is not None
        else None,
    )
