"""Types and schemas of every tool: what the generated ``types.py`` modules hold, the JSON
Schemas of payloads, results and server data, and every reason one cannot be generated.

The checker runs :func:`analyze_types` over the whole design and reports its errors with the
others; the builders read the same analysis, so a type is examined once per generation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import BaseModel

from agentgen.codegen.builders.owners import toolset_kind
from agentgen.codegen.generation_model import TypeRef
from agentgen.codegen.model_source import model_loc
from agentgen.codegen.pytypes import TypeModule, UnsupportedType
from agentgen.dsl.errors import DesignError
from agentgen.dsl.expr import RootExpr, ServerDataExpr, ToolExpr, ToolsetExpr, TypeExpr
from agentgen.dsl.names import python_identifier, q
from agentgen.dsl.types import Mode, model_schema, prefetch_schemas
from agentgen.runtime.contracts.canonical import compact_json
from agentgen.runtime.contracts.json_values import encodes_utf8, json_problem, lone_surrogate
from agentgen.runtime.contracts.limits import MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH
from agentgen.runtime.contracts.schema_inspection import SchemaProblem, check_bounds, inspect
from agentgen.runtime.contracts.schemas import (
    JSON_SCHEMA_DIALECT,
    empty_payload_schema,
    null_result_schema,
)
from agentgen.runtime.contracts.specs import ServerDataSpec
from agentgen.runtime.json_pointer import format_pointer, resolve_reference

__all__ = [
    "AGENT_TEXT_RESULT_SCHEMA",
    "ToolTypes",
    "ToolsetTypes",
    "TypeAnalysis",
    "analyze_types",
    "json_schema",
    "schema_problems",
]

#: The result of an agent tool declared without ``Return``: the agent's final text.
AGENT_TEXT_RESULT_SCHEMA = {"$schema": JSON_SCHEMA_DIALECT, "type": "string"}


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


def _resolves(schema: dict[str, Any], ref: str) -> bool:
    try:
        resolve_reference(schema, ref)
    except LookupError:
        return False
    return True


def schema_problems(value: dict[str, Any], *, payload: bool) -> list[str]:
    """Why a JSON Schema dict given to ``Args``/``Return`` cannot be a tool contract."""
    # Imported here, like the runtime does: only designs with JSON Schema dicts need it.
    import jsonschema  # type: ignore[import-untyped, unused-ignore]

    # The runtime refuses a schema over its size and nesting limits before reading it further;
    # so does this check, first: the walks below recurse, and a schema nested hundreds of
    # levels deep would exhaust Python's recursion.
    try:
        check_bounds(value, max_bytes=MAX_SCHEMA_BYTES, max_depth=MAX_SCHEMA_DEPTH)
    except SchemaProblem as exc:
        return [
            f"cannot be a tool contract: {exc} (the runtime's limits: {MAX_SCHEMA_DEPTH} levels, "
            f"{MAX_SCHEMA_BYTES} bytes of compact JSON); flatten it with $defs and $ref, or "
            "make it smaller"
        ]
    problem = json_problem(value)
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
        at = format_pointer(exc.absolute_path)
        problems.append(
            f"is not a valid JSON Schema (2020-12): {exc.message}" + (f" (at {at})" if at else "")
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
        elif ref.startswith("#/") and not _resolves(value, ref):
            problems.append(f"refers to {q(ref)} (at {where}), which the schema does not define")
    if not problems:
        # What the generated package checks when it is imported: reference cycles that never
        # descend into the value, references that fan out, patterns RE2 cannot run.
        try:
            inspect(value)
        except SchemaProblem as exc:
            problems.append(f"cannot be a tool contract: {exc}")
    return problems


def json_schema(
    model: type[BaseModel], mode: Literal["validation", "serialization"]
) -> dict[str, Any]:
    return {"$schema": JSON_SCHEMA_DIALECT, **model_schema(model, mode)}


@dataclass(frozen=True)
class ToolTypes:
    payload: TypeRef
    result: TypeRef
    server_data: tuple[ServerDataSpec, ...]


@dataclass
class ToolsetTypes:
    """The ``types.py`` of one toolset and the types of each of its tools that can be
    generated (a tool with a type error has no entry)."""

    module: TypeModule
    #: How generated executors refer to the module: ``types``, or ``_types`` when a tool's
    #: method is named ``types`` and would shadow it.
    types_module: str
    tools: dict[str, ToolTypes] = field(default_factory=dict)


@dataclass
class TypeAnalysis:
    #: By ``id()`` of each (non-registry) toolset expression.
    toolsets: dict[int, ToolsetTypes] = field(default_factory=dict)
    errors: list[DesignError] = field(default_factory=list)

    def of(self, toolset: ToolsetExpr) -> ToolsetTypes:
        return self.toolsets[id(toolset)]


def analyze_types(root: RootExpr, sources: Mapping[str, str] | None = None) -> TypeAnalysis:
    """Examine the types of every tool of every toolset (used or not: a design error in an
    unused toolset is still an error). Never raises for a broken design.

    ``sources`` (module name → file, from the loader) finds the source of models whose modules
    the load unloaded: a field that cannot be generated is reported at its own line.
    """
    analysis = TypeAnalysis()
    prefetch_schemas(list(_models(root)))
    for toolset in root.toolsets:
        if not toolset.is_registry:
            analysis.toolsets[id(toolset)] = _toolset(toolset, analysis.errors, sources or {})
    return analysis


def _models(root: RootExpr) -> Iterable[tuple[type[BaseModel], Mode]]:
    """Every model whose JSON Schema generation will need, to compute them all at once."""
    for toolset in root.toolsets:
        for tool in toolset.tools:
            for expr, mode in (
                (tool.args, "validation"),
                (tool.result, "serialization"),
                *((d.schema, "serialization") for d in tool.server_data),
            ):
                value = expr.value if expr is not None else None
                if isinstance(value, type) and issubclass(value, BaseModel):
                    yield value, cast(Mode, mode)


def _toolset(
    expr: ToolsetExpr, errors: list[DesignError], sources: Mapping[str, str]
) -> ToolsetTypes:
    # The executor protocol annotates its methods with ``types.X``; a method named ``types``
    # would shadow the module there, which is then imported as ``_types``.
    methods = {python_identifier(tool.name) for tool in expr.tools}
    types = ToolsetTypes(TypeModule(), "_types" if "types" in methods else "types")
    agent_tools = toolset_kind(expr) == "agent"
    for tool in expr.tools:
        payload = _type_ref(
            types, tool.args, result=False, tool=tool, errors=errors, sources=sources
        )
        result: TypeRef | None
        if tool.result is None and agent_tools:
            # An agent tool without Return answers with the agent's final text.
            result = TypeRef("schema", None, compact_json(AGENT_TEXT_RESULT_SCHEMA), "str")
        else:
            result = _type_ref(
                types, tool.result, result=True, tool=tool, errors=errors, sources=sources
            )
        server_data = _server_data(tool, errors)
        if expr.publish_to:
            _check_published(expr, tool, payload, result, errors)
        if payload is not None and result is not None and server_data is not None:
            types.tools[tool.name] = ToolTypes(payload, result, server_data)
    return types


def _check_published(
    toolset: ToolsetExpr,
    tool: ToolExpr,
    payload: TypeRef | None,
    result: TypeRef | None,
    errors: list[DesignError],
) -> None:
    """Report a model's JSON Schema a registry consumer would refuse to compile.

    pydantic validates with its own regex engine, which reads patterns RE2 does not
    (``\\u{7F}``, ``[a-z&&[^aeiou]]``); a published toolset's consumers match them on RE2 and
    refuse the whole toolset when it registers, far from the design. (JSON Schema dicts were
    checked this way already, whether published or not.)"""
    registries = ", ".join(q(registry.name) for registry, _ in toolset.publish_to)
    for expr, ref, func in ((tool.args, payload, "Args"), (tool.result, result, "Return")):
        if expr is None or ref is None or ref.kind != "model":
            continue
        try:
            inspect(json.loads(ref.schema_json))
        except SchemaProblem as exc:
            errors.append(
                DesignError(
                    expr.loc,
                    tool.where(),
                    f"{func} model {ref.class_name}: its JSON Schema cannot be published to "
                    f"registry {registries}: every consumer would refuse it ({exc}); change "
                    "the field so that both pydantic and RE2 read it",
                )
            )


def _type_ref(
    types: ToolsetTypes,
    expr: TypeExpr | None,
    *,
    result: bool,
    tool: ToolExpr,
    errors: list[DesignError],
    sources: Mapping[str, str],
) -> TypeRef | None:
    if expr is None:
        if result:
            return TypeRef("null", None, compact_json(null_result_schema()), "None")
        return TypeRef("empty", None, compact_json(empty_payload_schema()), "EmptyPayload")
    func = "Return" if result else "Args"
    value = expr.value
    if isinstance(value, dict):
        problems = schema_problems(value, payload=not result)
        errors.extend(
            DesignError(expr.loc, tool.where(), f"{func} JSON Schema {problem}")
            for problem in problems
        )
        if problems:
            return None
        schema = {"$schema": JSON_SCHEMA_DIALECT, **value}
        return TypeRef("schema", None, compact_json(schema), "Any")
    module = types.module
    known = len(module.problems)
    name: str | None = None
    try:
        name = module.add_model(value)
    except UnsupportedType as exc:
        module.problems.append(exc)
    unsupported = module.problems[known:]
    errors.extend(
        _unsupported(expr, tool, f"{func} {problem}", problem, sources) for problem in unsupported
    )
    try:
        schema = json_schema(value, "serialization" if result else "validation")
    except Exception as exc:  # pydantic's schema generation raises several types
        errors.append(
            DesignError(
                expr.loc,
                tool.where(),
                f"{func} model {value.__qualname__} has no JSON Schema: {str(exc).splitlines()[0]}",
            )
        )
        return None
    if unsupported or name is None:  # reported (a NaN default, say, would be twice)
        return None
    # pydantic names a class's $defs entry after the class, or, where two classes of one
    # schema share a name, after their modules and qualnames ("_agentgen_design_1__A__Item"):
    # generated classes live in another module, and the design's is named by load order.
    # (Unless the module has problems: a class used by a model reported before is unwritten.)
    for key in schema.get("$defs", {}) if not module.problems else ():
        if key not in module.design_names:
            errors.append(
                DesignError(
                    expr.loc,
                    tool.where(),
                    f"{func} model {value.__qualname__}: its JSON Schema names the type {q(key)} "
                    "after its module, since two classes of the schema have the same name; "
                    "generated code lives in another module: give the classes different names",
                )
            )
            return None
    text = _schema_text(schema, expr, tool, f"{func} model {value.__qualname__}", errors)
    if text is None:
        return None
    return TypeRef("model", name, text, f"{types.types_module}.{name}")


def _unsupported(
    expr: TypeExpr,
    tool: ToolExpr,
    message: str,
    problem: UnsupportedType,
    sources: Mapping[str, str],
) -> DesignError:
    """The error of a model the generator cannot reproduce, at the field (or class) at fault
    when its source can be read, with the ``Args``/``Return`` call as the related place."""
    loc = model_loc(*problem.at, sources) if problem.at is not None else None
    if loc is None or loc == expr.loc:
        return DesignError(expr.loc, tool.where(), message)
    return DesignError(loc, tool.where(), message, related=(expr.loc,))


def _schema_text(
    schema: dict[str, Any],
    expr: TypeExpr | ServerDataExpr,
    tool: ToolExpr,
    what: str,
    errors: list[DesignError],
) -> str | None:
    """The compact JSON of a model's schema, or None after reporting why it cannot be
    written: a lone surrogate, or a number JSON has no spelling for (a ``Field(le=inf)``, a
    NaN default), which pydantic puts in a schema as is."""
    try:
        text = compact_json(schema)
    except ValueError:  # allow_nan=False: infinity or NaN somewhere in the schema
        problem = json_problem(schema) or "holds a number JSON cannot write"
        errors.append(
            DesignError(
                expr.loc,
                tool.where(),
                f"{what}: its JSON Schema cannot be written as JSON: {problem} (pydantic copies "
                "defaults and bounds such as Field(le=float('inf')) into the schema); remove "
                "the bound, or use a finite value",
            )
        )
        return None
    surrogate = None if encodes_utf8(text) else lone_surrogate(schema)
    if surrogate is None:
        return text
    path, code = surrogate
    errors.append(
        DesignError(
            expr.loc,
            tool.where(),
            f"{what}: its JSON Schema contains a lone surrogate ({code}) at {path}, which no "
            "UTF-8 file, JSON document or provider request can carry; remove it from the model",
        )
    )
    return None


def _server_data(tool: ToolExpr, errors: list[DesignError]) -> tuple[ServerDataSpec, ...] | None:
    found: list[ServerDataSpec] = []
    ok = True
    for data in tool.server_data:
        if data.schema is None:  # reported by the DSL
            ok = False
            continue
        try:
            schema = json_schema(data.schema.value, "serialization")
        except Exception as exc:
            errors.append(
                DesignError(data.loc, data.where(), f"ServerData schema has no JSON Schema: {exc}")
            )
            ok = False
            continue
        text = _schema_text(schema, data, tool, "ServerData schema", errors)
        if text is None:
            ok = False
            continue
        found.append(ServerDataSpec(data.kind, data.audience, text, data.description))
    return tuple(found) if ok else None
