"""Property-based requests generated from the registry's own OpenAPI document (schemathesis):
whatever arrives, the registry answers with a documented status and body, never a 5xx.

The registry runs as its own process (``agentgen registry serve``, in-memory store) on a free
loopback port; a bounded number of examples per operation keeps the run short.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks

from tests.registry.conftest import free_port, start_registry_process

EXAMPLES = 8


@pytest.fixture(scope="module")
def registry_url() -> Iterator[str]:
    port = free_port()
    process = start_registry_process("memory", port)
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(10)
    assert process.returncode is not None


def test_every_operation_answers_as_documented(registry_url: str) -> None:
    schema = schemathesis.openapi.from_url(f"{registry_url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(
                checks=[
                    checks.not_a_server_error,
                    checks.status_code_conformance,
                    checks.content_type_conformance,
                    checks.response_schema_conformance,
                ]
            )

        check()


def test_the_document_lists_every_operation(registry_url: str) -> None:
    import httpx2

    document = httpx2.get(f"{registry_url}/openapi.json").json()
    assert set(document["paths"]) >= {
        "/health",
        "/v1/providers/register",
        "/v1/providers/claim",
        "/v1/providers/complete",
        "/v1/toolsets/list",
        "/v1/toolsets/resolve",
        "/v1/calls",
        "/v1/calls/retry",
        "/v1/calls/result",
    }
    responses = document["paths"]["/v1/calls"]["post"]["responses"]
    assert {"200", "404", "409", "413", "422"} <= set(responses)
