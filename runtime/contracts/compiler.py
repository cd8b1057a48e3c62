"""Compiling a dynamic (registry) tool's wire declaration into a self-contained spec.

Compiled tools get their specs from generated packages; a registry tool is known only by the
declaration its provider published, so the consumer compiles it here, once per declaration, into
the same :class:`~agentgen.runtime.contracts.specs.ToolSpec` the rest of the runtime uses.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from agentgen.runtime.contracts.canonical import compact_json
from agentgen.runtime.contracts.declarations import ContractError, ToolSchema
from agentgen.runtime.contracts.json_values import json_problem, lone_surrogate
from agentgen.runtime.contracts.lazy_codec import LazySchemaCodec
from agentgen.runtime.contracts.limits import MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH
from agentgen.runtime.contracts.schema_check import check_schema
from agentgen.runtime.contracts.schema_inspection import (
    Bounds,
    SchemaProblem,
    check_bounds,
    inspect,
)
from agentgen.runtime.contracts.schema_verdicts import default_verdicts
from agentgen.runtime.contracts.specs import (
    BoundsSpec,
    ConfirmationSpec,
    PagingSpec,
    ServerDataSpec,
    ToolSpec,
    TypeSpec,
)
from agentgen.runtime.contracts.validation import check_payload, checked_declaration
from agentgen.runtime.json_pointer import format_pointer
from agentgen.runtime.search.analysis import SEARCH_VERSION
from agentgen.runtime.search.document import SearchDocument, search_document

__all__ = ["compile"]


def compile(
    declaration: ToolSchema | Mapping[str, Any] | None,
    *,
    toolset: str,
    registration_token: str | None = None,
    fresh: bool = False,
) -> ToolSpec:
    """An independent spec for a dynamic (registry) tool, whose codecs validate payloads and
    results with its JSON Schemas (2020-12), keep numbers exact and never fetch ``$ref``s.

    Everything the consumer needs comes from the declaration's consumer contract: nothing is
    inferred from field names (no context, no permissions). ``toolset`` is the registration
    name the tool was resolved under; ``registration_token``, when given, the token of the
    admission it was read from. Whatever object the declaration is (JSON, a model, a model
    changed after validation or built without it), everything in it is checked, within the
    stated limits of :mod:`~agentgen.runtime.contracts.limits`
    (:func:`~agentgen.runtime.contracts.validation.checked_declaration`; ``fresh`` is its
    promise that the declaration is a model just validated from JSON and shared with no one).
    """
    bounds: dict[str, Bounds] = {}
    declaration = checked_declaration(
        declaration,
        toolset=toolset,
        registration_token=registration_token,
        fresh=fresh,
        bounds=bounds,
    )
    name = declaration.name
    contract = declaration.consumer_contract
    if contract is None:
        raise ContractError(
            f"tool {name!r} has no generated consumer contract: a schema-only registration "
            "cannot be consumed dynamically; publish the provider's full tool_schemas()"
        )
    if contract.kind not in ("service", "agent"):
        raise ContractError(f"tool {name!r} requires compiled {contract.kind} execution")
    result_is_null = declaration.result_schema.get("type") == "null"
    if contract.kind == "agent" and (contract.agent is None or result_is_null):
        raise ContractError(
            f"agent tool {name!r} requires an executor, immutable configuration, and result "
            "contract"
        )
    if contract.kind == "service" and contract.agent is not None:
        raise ContractError(f"tool {name!r} declares an agent target for service execution")
    search = _search_document(declaration)
    kinds: set[str] = set()
    for data in contract.server_data:
        if data.kind in kinds:
            raise ContractError(f"tool {name!r} repeats server data kind {data.kind!r}")
        kinds.add(data.kind)
    # checked_declaration bounded these three schemas already (the same limits, the same
    # content); server data schemas are bounded here.
    payload_bounds = bounds["payload_schema"]
    payload = _schema_type(
        name, toolset, "payload", declaration.payload_schema, contract.payload.name, payload_bounds
    )
    execution_bounds = bounds["execution_payload_schema"]
    if declaration.execution_payload_schema != declaration.payload_schema:  # usually the same
        _schema_type(
            name,
            toolset,
            "execution payload",
            declaration.execution_payload_schema,
            None,
            execution_bounds,
        )
    plain = payload_bounds.plain and execution_bounds.plain
    check_payload(declaration, payload.schema_json if plain else None)
    result_name = contract.result.name if contract.result else None
    result = _schema_type(
        name, toolset, "result", declaration.result_schema, result_name, bounds["result_schema"]
    )
    for data in contract.server_data:
        _schema_type(name, toolset, f"server data {data.kind!r}", data.schema_, None)
    paging = contract.bounds.paging if contract.bounds else None
    return ToolSpec(
        id=name,
        toolset=toolset,
        title=contract.title,
        description=declaration.description or "",
        payload=payload,
        result=result,
        search=search,
        tags=tuple(sys.intern(tag) for tag in declaration.tags),
        kind=contract.kind,
        agent_id=contract.agent.executor if contract.agent else None,
        confirmation=ConfirmationSpec(
            contract.confirmation.prompt_template,
            contract.confirmation.denied_result_template,
            contract.confirmation.title,
        )
        if contract.confirmation
        else None,
        bounds=BoundsSpec(
            PagingSpec(
                paging.cursor_field,
                paging.next_cursor_field,
                paging.continue_tool,
                paging.source_tool,
            )
            if paging
            else None
        )
        if contract.bounds
        else None,
        server_data=tuple(
            ServerDataSpec(d.kind, d.audience, compact_json(d.schema_), d.description)
            for d in contract.server_data
        ),
        required_labels=tuple(contract.required_labels),
    )


def _schema_type(
    name: str,
    toolset: str,
    role: str,
    schema: dict[str, Any],
    type_name: str | None,
    bounds: Bounds | None = None,
) -> TypeSpec:
    """The schema is checked now, so that an invalid one is refused when the catalog is
    built; its validator is made when a value first goes through it. ``bounds``: what checking
    its size and nesting measured, when that was done already."""
    try:
        if bounds is None:
            bounds = check_bounds(schema, max_bytes=MAX_SCHEMA_BYTES, max_depth=MAX_SCHEMA_DEPTH)
        text = compact_json(schema)
        data = text.encode("utf-8")
        if len(data) > MAX_SCHEMA_BYTES:
            raise SchemaProblem(
                f"the schema is larger than {MAX_SCHEMA_BYTES} bytes of compact JSON (the limit)"
            )
    except SchemaProblem as exc:
        raise ContractError(f"tool {name!r} {role}: {exc}") from None
    except ValueError as exc:  # infinities and NaN; lone surrogates (UnicodeEncodeError)
        raise ContractError(f"tool {name!r} {role}: {_not_json(schema, exc, toolset)}") from None
    except Exception as exc:
        raise ContractError(f"tool {name!r} {role}: {_refusal(exc)}") from None
    problem = default_verdicts().verdict(schema, data, _problem, plain=bounds.plain)
    if problem:
        raise ContractError(f"tool {name!r} {role}: {problem}")
    return TypeSpec(type_name, text, LazySchemaCodec(text, name, role))


def _not_json(schema: dict[str, Any], exc: Exception, toolset: str) -> str:
    """Why a schema parsed from a registry's JSON cannot be written back as JSON text, and
    where: JSON's grammar lets a string spell half of a UTF-16 pair and a number exceed a
    double, and ``json.loads`` reads both."""
    surrogate = lone_surrogate(schema)
    if surrogate is not None:
        path, code = surrogate
        return (
            f"the schema contains a lone surrogate ({code}) at {path}, which no UTF-8 "
            f"document or provider request can carry; fix the provider of toolset {toolset!r}"
        )
    problem = json_problem(schema)
    if problem is not None and problem.startswith(("the number inf", "the number -inf")):
        problem += " (a number beyond a double's range, such as 1e400, reads as infinity)"
    return f"the schema is not JSON: {problem or exc}; fix the provider of toolset {toolset!r}"


def _problem(schema: dict[str, Any]) -> str:
    """Why ``schema`` (within the size limits) cannot be a registry tool's schema, or ``""``."""
    try:
        check_schema(schema)
        inspect(schema)  # references, reference cycles, RE2 patterns
    except Exception as exc:
        return _refusal(exc)
    return ""


def _refusal(exc: Exception) -> str:
    if isinstance(exc, SchemaProblem):
        return str(exc)
    # jsonschema's SchemaError (its path is where in the schema the fault is), values that are
    # not JSON
    message = str(exc).splitlines()[0]
    path = getattr(exc, "absolute_path", None)
    at = f" (at {format_pointer(path)})" if path else ""
    return f"invalid JSON Schema: {message}{at}"


def _search_document(declaration: ToolSchema) -> SearchDocument:
    """The tool's search document in the version this runtime ranks with.

    A provider built by another agentgen version publishes documents of its own version; the
    consumer then counts the words of the declaration itself (ID, title, description, payload
    schema) with its own analysis, so every tool of a catalog is ranked the same way. It does
    so too for a document of its version that counts no word (``{"version": 3}``, as a
    provider written by hand may publish: ``terms`` may be left out), which would leave the
    tool findable by its exact name only; a declaration whose words really are none counts
    none again.
    """
    contract = declaration.consumer_contract
    assert contract is not None
    name = declaration.name
    published = contract.search
    if published.version != SEARCH_VERSION or not published.terms:
        return search_document(
            name, contract.title, declaration.description or "", declaration.payload_schema
        )
    try:
        return SearchDocument.from_json({"version": published.version, "terms": published.terms})
    except ValueError as exc:
        raise ContractError(f"tool {name!r} search document: {exc}") from None
