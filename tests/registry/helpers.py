"""Declarations and requests for the registry tests."""

from __future__ import annotations

import json
from typing import Any

from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.fingerprint import schema_fingerprint
from agentgen.runtime.contracts.wire import tool_schema
from agentgen.runtime.registry.admission import CallMeta, CallRequest, Registration
from agentgen.runtime.registry.auth import LOCAL
from agentgen.runtime.search.document import SearchDocument

SAY = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}
SAID = {"type": "object", "properties": {"said": {"type": "string"}}, "required": ["said"]}


def echo_toolset(
    name: str = "echo",
    *,
    version: str | None = None,
    description: str = "Say something back.",
    tags: tuple[str, ...] = (),
    payload: dict[str, Any] | None = None,
) -> ToolsetDeclaration:
    tool_id = f"{name.rsplit('.', 1)[-1]}.say"  # a toolset's tools carry its name
    tool = tool_schema(
        tool_id=tool_id,
        title="Say",
        description=description,
        tags=(),
        payload_schema=payload or SAY,
        payload_name=None,
        result_schema=SAID,
        result_name=None,
        search=SearchDocument.from_text(f"{tool_id} Say {description}"),
    )
    return ToolsetDeclaration(name=name, version=version, tags=list(tags), tools=[tool])


def registration(
    toolset: ToolsetDeclaration | None = None,
    *,
    revision: str = "r1",
    provider: str = "p1",
    incarnation: str = "i1",
    lease_ms: int = 5_000,
    fingerprint: str | None = None,
    wire: int | None = None,
) -> Registration:
    toolset = toolset or echo_toolset()
    extra = {} if wire is None else {"wire_protocol_version": wire}
    return Registration(
        toolset=toolset,
        schema_fingerprint=fingerprint or schema_fingerprint(toolset),
        revision=revision,
        provider_id=provider,
        incarnation_id=incarnation,
        lease_ms=lease_ms,
        **extra,
    )


def call(
    token: str,
    *,
    toolset: str = "echo",
    tool: str = "echo.say",
    run: str = "run-1",
    call_id: str = "call-1",
    payload: Any = None,
) -> CallRequest:
    return CallRequest(
        toolset=toolset,
        tool=tool,
        payload_json=json.dumps({"text": "hi"} if payload is None else payload),
        meta=CallMeta(run_id=run, tool_call_id=call_id),
        expected_registration_token=token,
        caller=LOCAL,
    )


def register_body(**change: Any) -> dict[str, Any]:
    """A ``/v1/providers/register`` body for the echo toolset, with ``change`` applied."""
    toolset = echo_toolset()
    body = {
        "toolset": toolset.to_json(),
        "schema_fingerprint": schema_fingerprint(toolset),
        "revision": "r1",
        "provider_id": "p1",
        "incarnation_id": "i1",
        "lease_ms": 5_000,
    }
    body.update(change)
    return body
