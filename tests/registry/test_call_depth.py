"""Registry calls nested in one another: agents published as registry tools that call each
other in a cycle end with a ``call_depth_exceeded`` error instead of recursing without end.

Two providers serve one agent each (``alpha`` and ``beta``) through a real registry service;
each agent's only tool is the other's. A consumer asking ``alpha`` starts the cycle.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest

from agentgen.runtime import Message, Runtime, ToolContext
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.messages import TextPart, ToolCallPart
from agentgen.runtime.registry import api
from agentgen.runtime.registry.admission import CallMeta
from agentgen.runtime.registry.client import MAX_CALL_DEPTH, ToolCallMeta
from agentgen.runtime.registry.http_client import HttpRegistryClient, HttpResultStream
from agentgen.runtime.registry.provider import ServeOptions, serve_toolset
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from tests.registry.conftest import Running, running_registry
from tests.registry.helpers import echo_toolset
from tests.runtime.agents import Sources, records_definition

OPTIONS = ServeOptions(
    provider_id="agents-1",
    lease_seconds=10,
    claim_wait_seconds=0.3,
    drain_seconds=5,
    concurrency=16,
    handle_signals=False,
)


@dataclass
class Relay:
    """Calls the one tool it is offered, then answers with that tool's result."""

    tool: str

    async def plan_start(self, input: PlanInput) -> PlanResult:
        part = ToolCallPart(f"ask-{self.tool}", self.tool, json.dumps({"text": "who?"}))
        return PlanResult(Message("assistant", (part,)))

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        (result,) = input.tool_results
        return PlanResult(Message("assistant", (TextPart(result.content),)))


def agent_runtime(url: str, agent: str, calls: str, planner: Relay) -> Runtime:
    """A runtime whose agent ``agent`` reads registry toolset ``calls``."""
    client = HttpRegistryClient(url)
    rt = Runtime()
    rt.register_registry("company", client, HttpResultStream(client, poll_ms=2_000))
    definition = records_definition(id=agent, specs=(), deferred_tool_ids=())
    sources = Sources(toolsets=[("company", calls, "", False)])
    rt.register_agent(definition.with_registry_tools(sources), planner=planner, executors={})
    return rt


@dataclass
class AgentTool:
    """A provider's executor that answers its tool by running an agent."""

    rt: Runtime
    agent: str
    depths: list[int] = field(default_factory=list)

    async def execute(self, tool_id: str, payload: Any, context: ToolContext) -> Any:
        self.depths.append(context.call_depth)
        outcome = await self.rt.client(self.agent).run(payload["text"])
        return {"said": outcome.final_text}


@asynccontextmanager
async def serving(url: str, toolset: str, executor: AgentTool) -> AsyncIterator[None]:
    client = HttpRegistryClient(url)
    stop = asyncio.Event()
    tokens: asyncio.Queue[str] = asyncio.Queue()
    task = asyncio.create_task(
        serve_toolset(
            client,
            echo_toolset(toolset),
            executor,
            revision="r1",
            options=OPTIONS,
            stop=stop,
            on_registered=tokens.put_nowait,
        )
    )
    await asyncio.wait_for(tokens.get(), 10)
    try:
        yield
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), 15)
        await client.aclose()


@pytest.fixture
async def registry() -> AsyncIterator[Running]:
    async with running_registry(SQLiteStore(":memory:")) as running:
        yield running


async def test_agents_calling_each_other_through_a_registry_end_with_the_depth_error(
    registry: Running,
) -> None:
    alpha = AgentTool(agent_runtime(registry.url, "alpha", "beta", Relay("beta.say")), "alpha")
    beta = AgentTool(agent_runtime(registry.url, "beta", "alpha", Relay("alpha.say")), "beta")
    async with serving(registry.url, "alpha", alpha), serving(registry.url, "beta", beta):
        consumer = agent_runtime(registry.url, "consumer", "alpha", Relay("alpha.say"))
        outcome = await consumer.client("consumer").run("who?")
    # Every provider's call was one deeper than the call that started its agent.
    served = sorted(alpha.depths + beta.depths)
    assert served == list(range(MAX_CALL_DEPTH + 1))
    assert alpha.depths == list(range(0, MAX_CALL_DEPTH + 1, 2))
    # The innermost agent's call was refused, unsent, and its words came back up the chain.
    innermost, called = ("alpha", "beta") if MAX_CALL_DEPTH % 2 == 0 else ("beta", "alpha")
    text = outcome.final_text
    assert "call_depth_exceeded" in text
    assert f"agent {innermost!r}" in text
    assert f"tool '{called}.say' of toolset '{called}' (registry 'company')" in text
    assert f"nested in {MAX_CALL_DEPTH + 1} registry calls" in text
    assert f"at most {MAX_CALL_DEPTH}" in text


async def test_a_call_deeper_than_the_maximum_is_refused_by_the_registry(
    registry: Running,
) -> None:
    """A client that does not check the depth itself is refused by the registry's schema."""
    body = {
        "toolset": "alpha",
        "tool": "alpha.say",
        "payload_json": '{"text": "hi"}',
        "meta": {"run_id": "run-1", "tool_call_id": "call-1", "call_depth": MAX_CALL_DEPTH + 1},
        "expected_registration_token": "0" * 64,
    }
    async with httpx2.AsyncClient(base_url=registry.url) as http:
        answer = await http.post("/v1/calls", json=body)
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["code"] == "validation_error" and "call_depth" in error["message"]


def test_a_depth_of_zero_is_left_out_of_the_wire_and_of_the_call_digest() -> None:
    """Peers older than the field read calls made at depth 0 exactly as before."""
    meta = CallMeta(run_id="run-1", tool_call_id="call-1")
    assert "call_depth" not in meta.model_dump_json()
    assert "call_depth" not in meta.model_dump()
    deeper = CallMeta(run_id="r", tool_call_id="c", call_depth=2)
    assert json.loads(deeper.model_dump_json())["call_depth"] == 2


async def test_a_claim_without_the_header_gets_calls_without_their_depth(
    registry: Running,
) -> None:
    """An older provider (no ``x-reads-call-depth``) would refuse the whole claim for a field
    it does not know: it gets the call without it."""
    provider = HttpRegistryClient(registry.url)
    consumer = HttpRegistryClient(registry.url)
    try:
        answer = await provider.register(
            echo_toolset("alpha"),
            schema_fingerprint=_fingerprint(echo_toolset("alpha")),
            revision="r1",
            provider_id="old-1",
            incarnation_id="i1",
            lease_ms=10_000,
        )
        await consumer.call_resolved_tool(
            toolset="alpha",
            tool="alpha.say",
            payload_json='{"text": "hi"}',
            meta=ToolCallMeta("run-1", "call-1", call_depth=3),
            expected_registration_token=answer.registration_token,
        )
        body = api.ClaimRequest(
            toolset="alpha",
            registration_token=answer.registration_token,
            provider_id="old-1",
            incarnation_id="i1",
            max_calls=1,
            wait_ms=0,
            claim_operation_id="op-1",
        )
        async with httpx2.AsyncClient(base_url=registry.url) as http:
            old = await http.post("/v1/providers/claim", content=body.model_dump_json(),
                                  headers={"content-type": "application/json"})  # fmt: skip
        (call,) = old.json()["calls"]
        assert "call_depth" not in call["meta"]
        # The same claim, repeated by a provider that reads the depth, gets it.
        (again,) = await provider.claim(
            "alpha", answer.registration_token, "old-1", "i1", max_calls=1, wait_ms=0,
            operation_id="op-1",
        )  # fmt: skip
        assert again.meta.call_depth == 3
    finally:
        await provider.aclose()
        await consumer.aclose()


def _fingerprint(toolset: Any) -> str:
    from agentgen.runtime.contracts.wire import fingerprint

    return fingerprint(toolset)


async def test_the_openapi_document_describes_the_depth_and_its_claim_header(
    registry: Running,
) -> None:
    async with httpx2.AsyncClient(base_url=registry.url, timeout=10) as http:
        document = (await http.get("/openapi.json")).json()
    depth = document["components"]["schemas"]["CallMeta"]["properties"]["call_depth"]
    assert (depth["type"], depth["minimum"], depth["maximum"]) == ("integer", 0, MAX_CALL_DEPTH)
    assert "call_depth" not in document["components"]["schemas"]["CallMeta"].get("required", [])
    parameters = document["paths"]["/v1/providers/claim"]["post"]["parameters"]
    assert [(p["name"], p["in"]) for p in parameters] == [(api.CALL_DEPTH_HEADER, "header")]
