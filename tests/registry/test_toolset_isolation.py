"""A provider token serves only its own toolsets: what it can name (provider, incarnation and
claim operation IDs, which are the provider's to choose) never reaches another toolset's calls.
Against the real service, on every store."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentgen.runtime.contracts.fingerprint import schema_fingerprint
from agentgen.runtime.registry.auth import TokenTable
from agentgen.runtime.registry.store import Store
from tests.registry.conftest import Running, running_registry
from tests.registry.helpers import echo_toolset, register_body
from tests.registry.test_http_boundary import post

ECHO = "provider-token-echo-0001"
OTHER = "provider-token-other-0002"
CONSUMER = "consumer-token-0000003"
TOKENS = {
    "tokens": [
        {"name": "echo-provider", "role": "provider", "toolsets": ["echo"], "token": ECHO},
        {"name": "other-provider", "role": "provider", "toolsets": ["other"], "token": OTHER},
        {"name": "assistant", "role": "consumer", "token": CONSUMER},
    ]
}
SECRET = {"text": "the echo toolset's private payload"}
#: The same provider and incarnation IDs in both toolsets (a provider process serving two
#: toolsets has one identity; or another provider chose them).
IDS = {"provider_id": "p1", "incarnation_id": "i1"}


@pytest.fixture
async def secured(store: Store) -> AsyncIterator[Running]:
    async with running_registry(store, tokens=TokenTable.from_json(TOKENS, "test")) as running:
        yield running


async def ok(running: Running, path: str, body: Any, token: str) -> dict[str, Any]:
    response = await post(running, path, body, token)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def register(running: Running, name: str, token: str) -> str:
    toolset = echo_toolset(name)
    body = register_body(
        toolset=toolset.to_json(), schema_fingerprint=schema_fingerprint(toolset), lease_ms=60_000
    )
    admitted: str = (await ok(running, "/v1/providers/register", body, token))["registration_token"]
    return admitted


def claim_body(name: str, token: str, operation: str, wait_ms: int) -> dict[str, Any]:
    return {
        "toolset": name,
        "registration_token": token,
        **IDS,
        "max_calls": 4,
        "wait_ms": wait_ms,
        "claim_operation_id": operation,
    }


async def test_another_toolsets_provider_cannot_replay_a_claim_operation(
    secured: Running,
) -> None:
    echo = await register(secured, "echo", ECHO)
    other = await register(secured, "other", OTHER)
    call = {
        "toolset": "echo",
        "tool": "echo.say",
        "payload_json": json.dumps(SECRET),
        "meta": {"run_id": "run-1", "tool_call_id": "call-1"},
        "expected_registration_token": echo,
    }
    use_id = (await ok(secured, "/v1/calls", call, CONSUMER))["tool_use_id"]
    claimed = await ok(
        secured, "/v1/providers/claim", claim_body("echo", echo, "op-1", 2_000), ECHO
    )
    assert [c["tool_use_id"] for c in claimed["calls"]] == [use_id]
    # The other toolset's provider repeats "its" claim operation op-1 under the same IDs: a
    # claim operation of its own lease in its own toolset, which took nothing. It was handed
    # the echo call, payload and all (the operation's record was keyed by lease and operation
    # ID alone, and replayed before anything else was checked).
    answer = await post(
        secured, "/v1/providers/claim", claim_body("other", other, "op-1", 0), OTHER
    )
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"calls": []}
    assert "private payload" not in answer.text
    # Giving that operation back closes nothing of the echo toolset's.
    given = {"toolset": "other", "registration_token": other, **IDS, "claim_operation_id": "op-1"}
    assert await ok(secured, "/v1/providers/give_back", given, OTHER) == {"calls": 0}
    # The echo provider's own replay still has its call, which it completes.
    again = await ok(secured, "/v1/providers/claim", claim_body("echo", echo, "op-1", 0), ECHO)
    assert [c["tool_use_id"] for c in again["calls"]] == [use_id]
    done = {"toolset": "echo", "tool_use_id": use_id, **IDS, "status": "completed",
            "result_json": '{"said": "hi"}'}  # fmt: skip
    assert await ok(secured, "/v1/providers/complete", done, ECHO) == {"ok": True}
