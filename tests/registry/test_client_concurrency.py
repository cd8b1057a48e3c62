"""One ``HttpRegistryClient`` shared by many concurrent runs: what one request's answer means
must not depend on the replies other requests received meanwhile, and what a cancelled run
left behind must not accumulate.

The registry is a ``MockTransport`` whose answers wait on events, so that replies arrive in
exactly the order each test needs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Coroutine
from typing import Any

import httpx2
import pytest

from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.fingerprint import registration_token
from agentgen.runtime.contracts.wire import fingerprint
from agentgen.runtime.registry import api, http_client
from agentgen.runtime.registry.client import CallRef, ResolvedToolset, ToolCallMeta
from agentgen.runtime.registry.http_client import HttpRegistryClient, HttpResultStream
from agentgen.runtime.registry.local import LocalRegistry
from agentgen.runtime.registry.service import ServiceConfig
from tests.runtime.agents import provider_toolset

Handler = Callable[[httpx2.Request], Coroutine[Any, Any, httpx2.Response]]


def client_of(handler: Handler) -> HttpRegistryClient:
    return HttpRegistryClient(
        "http://127.0.0.1:9", name="company", transport=httpx2.MockTransport(handler)
    )


def resolve_answer(declaration: ToolsetDeclaration, revision: str) -> tuple[str, str]:
    """A ``/toolsets/resolve`` answer's text and its registration token."""
    token = registration_token(fingerprint(declaration), revision)
    body = api.ResolveResponse(toolset=declaration, registration_token=token)
    return body.model_dump_json(), token


def ok(body: api.ResolveManyResponse | api.CallRefBody | api.ResultResponse) -> httpx2.Response:
    return httpx2.Response(200, content=body.model_dump_json().encode())


async def test_unchanged_means_unchanged_from_the_answer_the_request_named() -> None:
    """A batch resolve names the answer it holds; the registry answers "unchanged". Meanwhile a
    slower request of the same client, sent before the toolset changed, kept an older answer:
    the "unchanged" reply must still hand out the answer it named, never that older one (a
    stale catalog whose token the registry retired)."""
    v1, token_v1 = resolve_answer(provider_toolset(version="1.0.0"), "r1")
    v2, token_v2 = resolve_answer(provider_toolset(version="2.0.0"), "r2")
    digest_v2 = hashlib.sha256(v2.encode()).hexdigest()
    arrived = [asyncio.Event() for _ in range(4)]
    answer_now = [asyncio.Event() for _ in range(4)]
    answer_now[1].set()
    answer_now[3].set()
    sent: list[dict[str, str]] = []

    async def handler(request: httpx2.Request) -> httpx2.Response:
        index = len(sent)
        known = json.loads(request.content)["known"]
        sent.append(known)
        arrived[index].set()
        await answer_now[index].wait()
        if index == 0:  # read while the registry still served v1
            entry = api.ResolvedEntry(name="records", status="resolved", answer=v1)
        elif index == 1:  # read after v2 replaced it
            entry = api.ResolvedEntry(name="records", status="resolved", answer=v2)
        else:  # the client names v2's answer, which is still current
            assert known == {"records": digest_v2}
            entry = api.ResolvedEntry(name="records", status="unchanged")
        return ok(api.ResolveManyResponse(toolsets=[entry]))

    client = client_of(handler)
    slow = asyncio.create_task(client.resolve_toolsets())
    await arrived[0].wait()
    ((_, fresh),) = await client.resolve_toolsets()
    assert isinstance(fresh, ResolvedToolset) and fresh.registration_token == token_v2
    named = asyncio.create_task(client.resolve_toolsets())
    await arrived[2].wait()
    answer_now[0].set()
    ((_, old),) = await slow  # its reply arrives last but one: the client now holds v1
    assert isinstance(old, ResolvedToolset) and old.registration_token == token_v1
    answer_now[2].set()
    ((_, unchanged),) = await named
    assert isinstance(unchanged, ResolvedToolset)
    assert unchanged.registration_token == token_v2
    assert unchanged.digest == digest_v2
    # And the client holds the answer the registry confirmed last.
    assert (await client.resolve_toolsets()) == [("records", unchanged)]
    assert sent[-1] == {"records": digest_v2}
    await client.aclose()


async def test_outcomes_that_came_with_their_calls_are_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run cancelled between its call's admission and its wait never asks for the outcome
    that came back with the call: the client keeps a bounded number of them, and one it
    forgot is asked of the registry (which keeps results for the call's retention)."""
    monkeypatch.setattr(http_client, "KEPT_EARLY_OUTCOMES", 2)
    token = "a" * 64
    polled: list[str] = []

    async def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if request.url.path == "/v1/calls":
            use_id = hashlib.sha256(body["meta"]["tool_call_id"].encode()).hexdigest()
            done = api.ResultResponse(status="completed", result_json='{"early": true}')
            return ok(
                api.CallRefBody(
                    tool_use_id=use_id,
                    registration_token=token,
                    execution_deadline_ms=1,
                    result_expires_at_ms=0,
                    result=done,
                )
            )
        assert request.url.path == "/v1/calls/result"
        polled.append(body["tool_use_id"])
        return ok(api.ResultResponse(status="completed", result_json='{"early": false}'))

    client = client_of(handler)
    refs: list[CallRef] = []
    for index in range(3):
        refs.append(
            await client.call_resolved_tool(
                toolset="records",
                tool="records.lookup",
                payload_json="{}",
                meta=ToolCallMeta(run_id="r", tool_call_id=f"call{index}"),
                expected_registration_token=token,
            )
        )
    # The newest two are answered from what came with them; the oldest was forgotten.
    for ref in refs[1:]:
        assert (await client.poll_result(ref)).result_json == '{"early": true}'
    assert polled == []
    assert (await client.poll_result(refs[0])).result_json == '{"early": false}'
    assert polled == [refs[0].tool_use_id]
    await client.aclose()


class Entered(httpx2.AsyncBaseTransport):
    """A real transport that says when a request has entered it."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner
        self.entered: dict[str, asyncio.Event] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/calls/result":
            self.entered.setdefault(request.url.path, asyncio.Event()).set()
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_cancelled_long_polls_give_their_connections_back() -> None:
    """Runs cancelled while they wait for their calls' outcomes release the connections of
    their long polls: on a pool of two connections, round after round of two cancelled polls
    leaves the client able to talk to the registry (a connection kept would leave the next
    request waiting for the pool)."""
    # Long polls answer "pending" within half a second (and the client polls again), so that
    # closing the registry does not wait out polls its clients gave up.
    with LocalRegistry(config=ServiceConfig(max_wait_ms=500)) as registry:
        pool = httpx2.AsyncHTTPTransport(
            limits=httpx2.Limits(max_connections=2, max_keepalive_connections=2)
        )
        transport = Entered(pool)
        client = HttpRegistryClient(registry.url, transport=transport, call_wait_ms=0)
        declaration = provider_toolset()
        registered = await client.register(
            declaration,
            schema_fingerprint=fingerprint(declaration),
            revision="r1",
            provider_id="nobody-claims",
            incarnation_id="i1",
            lease_ms=60_000,
        )
        refs = [
            await client.call_resolved_tool(
                toolset="records",
                tool="records.lookup",
                payload_json='{"id":"r1"}',
                meta=ToolCallMeta(run_id="run", tool_call_id=f"call{index}"),
                expected_registration_token=registered.registration_token,
            )
            for index in range(2)
        ]
        stream = HttpResultStream(client, poll_ms=30_000)  # pending: no provider claims them
        for _ in range(3):
            transport.entered.clear()
            waits = [asyncio.create_task(stream.await_result(ref)) for ref in refs]
            await transport.entered.setdefault("/v1/calls/result", asyncio.Event()).wait()
            for _ in range(3):  # let both polls reach the pool
                await asyncio.sleep(0)
            for wait in waits:
                wait.cancel()
            for wait in waits:
                with pytest.raises(asyncio.CancelledError):
                    await wait
            assert await client.list_toolsets() == ["records"]
        await client.aclose()
