"""Reading a registry declaration, whatever object it arrives as, into one that can be trusted.

``contracts.compile`` is handed registry JSON, validated ``ToolSchema`` models, models changed
after validation, or models built with ``model_construct`` (which skips validation). All of
them are read the same way here: bounded in size first (so nothing oversized is copied or
parsed), then dumped to plain JSON and validated again into a fresh, independent model. Then
the checks that span fields: the tool belongs to the toolset it is compiled for, confirmation
templates parse, a registration token, when one is given, is a token, and (once its schemas
are known to be valid) the payload is an object whose execution schema is the payload schema.
Every refusal is a :class:`~agentgen.runtime.contracts.declarations.ContractError` naming the
tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from agentgen.runtime.contracts.canonical import canonical_json, compact_json
from agentgen.runtime.contracts.declarations import ContractError, ToolSchema, shown
from agentgen.runtime.contracts.fingerprint import HEX64
from agentgen.runtime.contracts.limits import (
    MAX_DECLARATION_BYTES,
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
)
from agentgen.runtime.contracts.schema_inspection import Bounds, SchemaProblem, check_bounds
from agentgen.runtime.contracts.templates import check_template
from agentgen.runtime.contracts.validation_errors import first_error

__all__ = ["check_payload", "checked_declaration", "shown"]

_SCHEMAS = (
    ("payload_schema", "payload"),
    ("execution_payload_schema", "execution payload"),
    ("result_schema", "result"),
)
#: Room the declaration's own envelope (tool, contract, server data) adds around its schemas.
_ENVELOPE_DEPTH = 8


def _raw(declaration: object, key: str) -> Any:
    if isinstance(declaration, Mapping):
        return declaration.get(key)
    return getattr(declaration, key, None)


def _validated(declaration: ToolSchema | Mapping[str, Any], name: str, toolset: str) -> ToolSchema:
    try:
        if isinstance(declaration, ToolSchema):
            # Whatever happened to the model since it was built: its fields, as they are now
            # (Python mode: a NaN stays a NaN, to be refused as not JSON, not turned to null).
            data: Any = declaration.model_dump(by_alias=True, warnings=False)
        else:
            data = declaration
        return ToolSchema.model_validate(data)
    except ValidationError as exc:
        fix = ""
        if exc.errors()[0]["type"] == "lone_surrogate":  # not the consumer's to fix
            fix = f"; fix the provider of toolset {toolset!r}"
        raise ContractError(f"tool {name} declaration: {first_error(exc)}{fix}") from None
    except (TypeError, ValueError) as exc:  # a model_construct'ed field pydantic cannot dump
        raise ContractError(f"tool {name} declaration cannot be read as JSON: {exc}") from None


def checked_declaration(
    declaration: object,
    *,
    toolset: str,
    registration_token: str | None = None,
    fresh: bool = False,
    bounds: dict[str, Bounds] | None = None,
) -> ToolSchema:
    """A validated, independent copy of ``declaration`` that passed every check above.

    ``fresh`` says that ``declaration`` is a ``ToolSchema`` the caller has just validated from
    JSON and handed to no one else (the contract cache parsing a registry answer kept as text):
    it is then read as it is, since dumping and validating it again would give the same model.
    ``bounds``, when given, receives what the size checks measured of its payload, execution
    payload and result schemas (by field name). The copy's schemas hold the same JSON as the
    ones measured; a schema measured as :attr:`~.schema_inspection.Bounds.plain` is copied
    into JSON's own types again (pydantic dumps and validates a ``dict[str, Any]`` type by
    type), so the copy is plain as well.
    """
    if declaration is None:
        raise ContractError("tool declaration is required")
    if not isinstance(declaration, ToolSchema | Mapping):
        raise ContractError(
            f"tool declaration must be a ToolSchema or its JSON object, got "
            f"{type(declaration).__name__}"
        )
    name = shown(_raw(declaration, "name"))
    measured: dict[int, Bounds] = {}
    for key, role in _SCHEMAS:
        schema = _raw(declaration, key)
        try:
            found = check_bounds(schema, max_bytes=MAX_SCHEMA_BYTES, max_depth=MAX_SCHEMA_DEPTH)
        except SchemaProblem as exc:
            raise ContractError(f"tool {name} {role}: {exc}") from None
        measured[id(schema)] = found
        if bounds is not None:
            bounds[key] = found
    try:
        # The schemas just measured are counted as such, not walked again.
        check_bounds(
            declaration,
            max_bytes=MAX_DECLARATION_BYTES,
            max_depth=MAX_SCHEMA_DEPTH + _ENVELOPE_DEPTH,
            what="declaration",
            measured=measured,
        )
    except SchemaProblem as exc:
        raise ContractError(f"tool {name}: {exc}") from None
    fresh = fresh and type(declaration) is ToolSchema
    checked = declaration if fresh else _validated(declaration, name, toolset)
    assert isinstance(checked, ToolSchema)
    name = repr(checked.name)
    if registration_token is not None and not (
        isinstance(registration_token, str) and HEX64.fullmatch(registration_token)
    ):
        raise ContractError(
            f"tool {name}: registration token {shown(registration_token)} is not a token (64 "
            "lowercase hex digits); the registry must say which admission it read"
        )
    _check_membership(checked.name, toolset)
    contract = checked.consumer_contract
    if contract is not None and contract.confirmation is not None:
        confirmation = contract.confirmation
        for which, template in (
            ("confirmation prompt", confirmation.prompt_template),
            ("confirmation denied result", confirmation.denied_result_template),
        ):
            try:
                check_template(template)
            except Exception as exc:  # jinja's TemplateSyntaxError and friends
                message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise ContractError(f"tool {name} {which}: {message}") from None
    return checked


def check_payload(declaration: ToolSchema, payload_text: str | None = None) -> None:
    """The payload is a JSON object, and the schema that executes is the one that is validated
    and confirmed (called once both schemas are known to be valid JSON Schemas).

    ``payload_text``: the payload schema's compact JSON, when both schemas are made of JSON's
    own types only; an execution schema with the same text is then the same schema.
    """
    name = repr(declaration.name)
    payload = declaration.payload_schema
    if payload.get("type") != "object":
        found = shown(payload.get("type")) if "type" in payload else "none"
        raise ContractError(
            f'tool {name} payload: the schema must describe a JSON object ("type": "object"), '
            f"got type {found}"
        )
    execution = declaration.execution_payload_schema
    if payload_text is not None and compact_json(execution) == payload_text:
        return
    if canonical_json(execution) != canonical_json(payload):
        raise ContractError(
            f"tool {name} execution payload: the schema differs from the payload schema; the "
            "payload a consumer validates and confirms must be the payload that executes"
        )


def _check_membership(tool: str, toolset: str) -> None:
    """A toolset serves its own tools only: ``<toolset>.<tool>``, where a qualified
    registration name (``service.toolset``) stands for its last segment."""
    owner = tool.rsplit(".", 1)[0]
    if owner != toolset and not toolset.endswith("." + owner):
        raise ContractError(
            f"toolset {shown(toolset)} publishes tool {tool!r}, which is not a tool of "
            f"toolset {shown(toolset)}: its tools are named "
            f"'{toolset.rsplit('.', 1)[-1]}.<tool>'; fix the provider of {shown(toolset)}"
        )
