"""The service's event loop stays free while a large body is parsed: long polls, result reads and
health checks of every other client are served meanwhile (``bench/registry_loop.py`` measures
how long they wait)."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import pytest

from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.fingerprint import schema_fingerprint
from agentgen.runtime.registry import api, service
from agentgen.runtime.registry.admission import CatalogEntry, catalog_key, lease_key
from agentgen.runtime.registry.dispatch import OFF_LOOP_BYTES
from agentgen.runtime.registry.operations import RegistryOperations
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from agentgen.runtime.registry.store import Store
from tests.registry.conftest import FAST, running_registry
from tests.registry.helpers import call, echo_toolset, register_body, registration

JSON = {"content-type": "application/json"}


def padded(body: dict[str, Any] | bytes) -> bytes:
    """The body, made as large as a big registration with insignificant JSON whitespace."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return content + b" " * OFF_LOOP_BYTES


class Held:
    """Wraps work the service does for one request so that it lasts until the test releases
    it (as parsing or encoding 5 MB lasts half a second), noting whether it ended."""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()
        self.ended: list[bool] = []

    def around(self, work: Callable[..., Any]) -> Callable[..., Any]:
        def held(*args: Any, **kwargs: Any) -> Any:
            self.started.set()
            self.release.wait(5)
            self.ended.append(True)
            return work(*args, **kwargs)

        return held

    async def others_answered_meanwhile(
        self, http: httpx2.AsyncClient, request: Awaitable[httpx2.Response]
    ) -> httpx2.Response:
        """``request``'s answer, once /health and a listing were answered while its held work
        was still running (on the event loop, they would wait for it)."""
        answer = asyncio.ensure_future(request)
        assert await asyncio.to_thread(self.started.wait, 5)
        health = await http.get("/health")
        listed = await http.post("/v1/toolsets/list", content=b"{}", headers=JSON)
        assert self.ended == []
        self.release.set()
        assert health.status_code == 200 and listed.status_code == 200
        response = await answer
        assert self.ended == [True]
        assert response.status_code == 200, response.text
        return response


def wide_toolset(name: str, tools: int = 40) -> ToolsetDeclaration:
    """A toolset whose declaration (and resolve answer) is larger than OFF_LOOP_BYTES."""
    tool = echo_toolset(name).tools[0].to_json()
    wide = ToolsetDeclaration.model_validate(
        {"name": name, "tools": [{**tool, "name": f"{name}.say_{i}"} for i in range(tools)]}
    )
    assert len(wide.model_dump_json()) > OFF_LOOP_BYTES
    return wide


async def test_other_requests_are_answered_while_a_large_body_is_validated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held = Held()
    validate = held.around(api.RegisterRequest.model_validate_json)
    monkeypatch.setattr(api.RegisterRequest, "model_validate_json", staticmethod(validate))
    async with running_registry(SQLiteStore(":memory:")) as running:
        async with httpx2.AsyncClient(base_url=running.url, timeout=20) as http:
            register = http.post(
                "/v1/providers/register", content=padded(register_body()), headers=JSON
            )
            await held.others_answered_meanwhile(http, register)


@pytest.mark.parametrize("batch", [False, True], ids=["resolve", "resolve_many"])
async def test_other_requests_are_answered_while_a_large_answer_is_encoded(
    monkeypatch: pytest.MonkeyPatch, batch: bool
) -> None:
    name = f"wide{uuid.uuid4().hex[:12]}"  # an admission whose answer is not encoded yet
    toolset = wide_toolset(name)
    held = Held()
    if batch:  # the batch's answer, which holds each toolset's as a JSON string
        dump = held.around(api.ResolveManyResponse.model_dump_json)
        monkeypatch.setattr(api.ResolveManyResponse, "model_dump_json", dump)
    else:  # the toolset's answer, encoded once per admission
        monkeypatch.setattr(service, "_encode", held.around(service._encode))
    async with running_registry(SQLiteStore(":memory:")) as running:
        async with httpx2.AsyncClient(base_url=running.url, timeout=20) as http:
            body = register_body(toolset=toolset.to_json())
            body["schema_fingerprint"] = schema_fingerprint(toolset)
            registered = await http.post(
                "/v1/providers/register", content=json.dumps(body).encode(), headers=JSON
            )
            token = registered.json()["registration_token"]
            path = "/v1/toolsets/resolve_many" if batch else "/v1/toolsets/resolve"
            ask = {"toolsets": [name]} if batch else {"toolset": name}
            resolve = http.post(path, content=json.dumps(ask).encode(), headers=JSON)
            text = (await held.others_answered_meanwhile(http, resolve)).text
    if batch:
        [entry] = json.loads(text)["toolsets"]
        assert (entry["name"], entry["status"]) == (name, "resolved")
        text = entry["answer"]
    # Byte for byte the model's serialisation (clients keep its SHA-256 as the digest).
    assert text == api.ResolveResponse(toolset=toolset, registration_token=token).model_dump_json()


@pytest.mark.parametrize(
    ("body", "status", "code", "says"),
    [
        (padded(b'{"toolset": '), 400, "malformed_json", "the request body is not valid JSON ("),
        (padded(register_body(lease_ms="long")), 422, "validation_error", "lease_ms: "),
        (padded(b"[1, 2]"), 422, "validation_error", "(body): "),
        (b" " * OFF_LOOP_BYTES, 400, "malformed_json", "the request body is not valid JSON ("),
    ],
    ids=["not-json", "invalid", "not-an-object", "only-whitespace"],
)
async def test_large_bodies_are_refused_as_small_ones_are(
    body: bytes, status: int, code: str, says: str
) -> None:
    async with running_registry(SQLiteStore(":memory:")) as running:
        async with httpx2.AsyncClient(base_url=running.url, timeout=20) as http:
            response = await http.post("/v1/providers/register", content=body, headers=JSON)
            small = await http.post(
                "/v1/providers/register", content=body.rstrip() or b" ", headers=JSON
            )
    # What the same body without its padding gets (a parser's message names a column).
    for answer in (response, small):
        error = answer.json()["error"]
        assert (answer.status_code, error["code"]) == (status, code)
        assert error["message"].startswith(says), error
    if status == 422:
        assert small.json() == response.json()


async def test_an_entry_the_registry_wrote_is_not_parsed_again(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every call reads its toolset's entry: parsing what a registration or a lease renewal just
    # wrote would hold the loop as long as parsing the declaration (2,000 tools: 0.7 s).
    parsed: list[str] = []
    original = CatalogEntry.model_validate_json

    def counted(data: str, *args: Any, **kwargs: Any) -> CatalogEntry:
        parsed.append(data)
        return original(data, *args, **kwargs)

    monkeypatch.setattr(CatalogEntry, "model_validate_json", staticmethod(counted))
    ops = RegistryOperations(store, FAST)
    name = f"loop{uuid.uuid4().hex[:12]}"
    toolset = echo_toolset(name)
    done = await ops.register(registration(toolset))
    await ops.call(call(done.registration_token, toolset=name, tool=f"{name}.say"))
    await ops.renew(name, done.registration_token, "p1", "i1", 5_000)
    await ops.call(call(done.registration_token, toolset=name, tool=f"{name}.say", run="run-2"))
    read = await ops.resolve_entry(name)
    assert parsed == []
    # What is kept is what parsing the stored form gives.
    stored = await store.get(catalog_key(name))
    assert stored is not None and original(stored) == read.entry()
    assert read.toolset == toolset and list(read.provider_leases) == [lease_key("p1", "i1")]


@pytest.mark.parametrize("batch", [False, True], ids=["complete", "complete_many"])
async def test_other_requests_are_answered_while_a_large_result_is_checked(
    monkeypatch: pytest.MonkeyPatch, batch: bool
) -> None:
    held = Held()
    monkeypatch.setattr(service, "_not_json", held.around(service._not_json))
    result_json = json.dumps({"said": "x" * OFF_LOOP_BYTES})

    async with running_registry(SQLiteStore(":memory:")) as running:
        async with httpx2.AsyncClient(base_url=running.url, timeout=20) as http:

            async def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
                answer = await http.post(path, content=json.dumps(body).encode(), headers=JSON)
                assert answer.status_code == 200, answer.text
                data: dict[str, Any] = answer.json()
                return data

            token = (await post("/v1/providers/register", register_body()))["registration_token"]
            ref = await post(
                "/v1/calls",
                {
                    "toolset": "echo",
                    "tool": "echo.say",
                    "payload_json": '{"text": "hi"}',
                    "meta": {"run_id": "run-1", "tool_call_id": "call-1"},
                    "expected_registration_token": token,
                },
            )
            lease = {"toolset": "echo", "provider_id": "p1", "incarnation_id": "i1"}
            claim = {"registration_token": token, "claim_operation_id": "c1", "wait_ms": 1_000}
            claimed = await post("/v1/providers/claim", {**lease, **claim})
            assert [c["tool_use_id"] for c in claimed["calls"]] == [ref["tool_use_id"]]
            done = {"tool_use_id": ref["tool_use_id"], "status": "completed"}
            done["result_json"] = result_json
            if batch:
                path, body = "/v1/providers/complete_many", {**lease, "completions": [done]}
            else:
                path, body = "/v1/providers/complete", {**lease, **done}
            complete = http.post(path, content=json.dumps(body).encode(), headers=JSON)
            await held.others_answered_meanwhile(http, complete)
            read = {"tool_use_id": ref["tool_use_id"], "registration_token": token, "wait_ms": 0}
            outcome = await post("/v1/calls/result", read)
    assert (outcome["status"], outcome["result_json"]) == ("completed", result_json)


async def test_an_entry_is_written_with_its_declaration_serialised_once_off_the_loop(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A renewal writes the whole entry again: serialising 2,000 tools each time took 60 ms of
    # the event loop.
    threads: list[int] = []
    original = ToolsetDeclaration.model_dump_json

    def noted(self: ToolsetDeclaration, *args: Any, **kwargs: Any) -> str:
        threads.append(threading.get_ident())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ToolsetDeclaration, "model_dump_json", noted)
    ops = RegistryOperations(store, FAST)
    name = f"loop{uuid.uuid4().hex[:12]}"
    done = await ops.register(registration(echo_toolset(name)))
    await ops.renew(name, done.registration_token, "p1", "i1", 5_000)
    await ops.register(registration(echo_toolset(name), incarnation="i2"))  # a second lease
    await ops.drain(name, done.registration_token, "p1", "i1", 1_000)
    stored = await store.get(catalog_key(name))
    assert stored is not None
    # Exactly the text the entry serialises to as a whole.
    assert stored == CatalogEntry.model_validate_json(stored).model_dump_json()
    await ops.unregister(name, done.registration_token)
    retired = await store.get(catalog_key(name))
    assert retired is not None and '"state":"retired"' in retired
    assert retired == CatalogEntry.model_validate_json(retired).model_dump_json()
    # Once per registration (in its worker thread), never for a lease change.
    assert len(threads) == 2 and threading.get_ident() not in threads


def test_the_process_wide_caches_are_shared_safely_between_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every LocalRegistry serves on a thread of its own and worker threads parse large bodies,
    # all through these module-level caches; unlocked, two threads evicting at once raised
    # KeyError (or "dictionary changed size during iteration") and the cache grew past its size.
    import sys
    import threading

    from agentgen.runtime.lru import LRU
    from agentgen.runtime.registry import kept

    cache: LRU[str, ToolsetDeclaration] = LRU(4)
    monkeypatch.setattr(kept, "_PARSED", cache)
    declared = [ToolsetDeclaration(name=f"set{n}") for n in range(64)]
    texts = [one.model_dump_json() for one in declared]
    # Parsed at once, so that the threads spend their time in the cache (where they collide).
    by_text = dict(zip(texts, declared, strict=True))
    monkeypatch.setattr(ToolsetDeclaration, "model_validate_json", by_text.__getitem__)
    errors: list[BaseException] = []

    def churn(offset: int) -> None:
        try:
            for round_ in range(100_000):
                index = (offset + round_) % len(declared)
                assert kept.parsed(texts[index]) == declared[index]
        except BaseException as exc:  # reported below, with the thread's own error
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=churn, args=(offset,)) for offset in (0, 7)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(cache.entries) <= 4
