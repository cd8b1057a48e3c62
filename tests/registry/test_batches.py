"""Batched requests of the registry, against every store (parametrised): several decisions in
one trip to the store, several completions in one request, a claim that takes and acknowledges
several calls at once, a call answered with its outcome, and batch (conditional) resolves.

Each batch is judged element by element exactly as the single request would be."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agentgen.runtime.contracts.fingerprint import registration_token, schema_fingerprint
from agentgen.runtime.contracts.toolset_text import ToolsetText
from agentgen.runtime.registry import api
from agentgen.runtime.registry.auth import LOCAL
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.http_client import HttpRegistryClient
from agentgen.runtime.registry.operations import Completion, RegistryOperations
from agentgen.runtime.registry.sqlite_store import SQLiteStore, _decide
from agentgen.runtime.registry.store import Change, Store, StoreError, Write
from tests.registry.conftest import FAST, Running
from tests.registry.helpers import call, echo_toolset, registration


@pytest.fixture
def ops(store: Store) -> RegistryOperations:
    return RegistryOperations(store, FAST)


# --- stores ------------------------------------------------------------------------------------


async def test_decisions_taken_together_stay_atomic_and_independent(store: Store) -> None:
    def put(key: str, value: str) -> Any:
        def decide(values: Mapping[str, str | None], now: int) -> Change[str | None]:
            return Change(values[key], writes={key: Write(value)})

        return decide

    def copy(source: str, target: str) -> Any:
        def decide(values: Mapping[str, str | None], now: int) -> Change[str | None]:
            return Change(values[source], writes={target: Write(f"copy of {values[source]}")})

        return decide

    def refuse(values: Mapping[str, str | None], now: int) -> Change[None]:
        raise RegistryError("admission_conflict", "refused before writing")

    def write_then_refuse(values: Mapping[str, str | None], now: int) -> Change[None]:
        return Change(
            None,
            writes={"t:d": Write("written")},
            error=RegistryError("provider_lease_lost", "refused after writing"),
        )

    outcomes = await store.transact_many(
        [
            (["t:a"], put("t:a", "1")),
            (["t:a", "t:b"], copy("t:a", "t:b")),  # sees what the first one wrote
            (["t:c"], refuse),
            (["t:d"], write_then_refuse),
            (["t:a"], put("t:a", "2")),
        ]
    )
    assert outcomes[:2] == [None, "1"]
    assert isinstance(outcomes[2], RegistryError) and outcomes[2].code == "admission_conflict"
    assert isinstance(outcomes[3], RegistryError) and outcomes[3].code == "provider_lease_lost"
    assert outcomes[4] == "1"
    assert await store.get_many(["t:a", "t:b", "t:c", "t:d"]) == [
        "2",
        "copy of 1",
        None,  # the refused decision wrote nothing
        "written",  # a carried error is raised after writing, as transact does
    ]
    values, now = await store.snapshot(["t:a", "t:missing"])
    assert values == ["2", None]
    assert abs(now - await store.now_ms()) < 60_000  # the same clock (Redis TIME or the host)


async def test_a_claim_takes_every_queued_call_and_acknowledges_them(
    ops: RegistryOperations, store: Store
) -> None:
    token = (await ops.register(registration())).registration_token
    refs = [await ops.call(call(token, call_id=f"c{n}")) for n in range(5)]
    claimed = await ops.claim("echo", token, "p1", "i1", 16, 1_000, "op-1")
    assert [c.tool_use_id for c in claimed] == [r["tool_use_id"] for r in refs]
    # Acknowledged in the claim's own transaction: past the redelivery time (500 ms in these
    # stores) nothing is delivered again.
    await asyncio.sleep(0.6)
    assert await store.receive("requests:echo", "someone-else", 16, 0) == []
    # A transport retry of the same claim operation gets the same calls back.
    replayed = await ops.claim("echo", token, "p1", "i1", 16, 0, "op-1")
    assert [c.tool_use_id for c in replayed] == [r["tool_use_id"] for r in refs]


async def test_completions_in_one_batch_are_judged_one_by_one(ops: RegistryOperations) -> None:
    token = (await ops.register(registration())).registration_token
    await ops.register(registration(provider="p2"))
    first = await ops.call(call(token, call_id="first"))
    second = await ops.call(call(token, call_id="second"))
    held = await ops.claim("echo", token, "p1", "i1", 1, 1_000, "op-1")
    assert [c.tool_use_id for c in held] == [first["tool_use_id"]]
    others = await ops.claim("echo", token, "p2", "i1", 1, 1_000, "op-2")
    assert [c.tool_use_id for c in others] == [second["tool_use_id"]]
    refusals = await ops.complete_many(
        "echo",
        "p1",
        "i1",
        [
            Completion(first["tool_use_id"], "completed", '{"said":"one"}'),
            Completion(second["tool_use_id"], "completed", '{"said":"not mine"}'),
            Completion("0" * 64, "completed", "{}"),
        ],
    )
    assert refusals[0] is None
    assert refusals[1] is not None and refusals[1].code == "provider_lease_lost"
    assert refusals[2] is not None and refusals[2].code == "not_found"
    done = await ops.await_result(first["tool_use_id"], token, 1_000, caller=LOCAL)
    assert (done.status, done.result_json) == ("completed", '{"said":"one"}')
    # The refused completion changed nothing: the call still belongs to p2, which completes it.
    assert (
        await ops.await_result(second["tool_use_id"], token, 0, caller=LOCAL)
    ).status == "pending"
    await ops.complete("echo", second["tool_use_id"], "p2", "i1", "completed", '{"said":"2"}', "")
    assert (
        await ops.await_result(second["tool_use_id"], token, 1_000, caller=LOCAL)
    ).status == "completed"


async def test_a_call_that_waits_gets_its_outcome_with_its_reference(
    ops: RegistryOperations,
) -> None:
    token = (await ops.register(registration())).registration_token

    async def provide() -> None:
        (claimed,) = await ops.claim("echo", token, "p1", "i1", 1, 5_000, "op-1")
        await ops.complete(
            "echo", claimed.tool_use_id, "p1", "i1", "completed", '{"said":"hi"}', ""
        )

    provider = asyncio.create_task(provide())
    ref, outcome = await ops.call_and_wait(call(token), 5_000)
    await provider
    assert (outcome.status, outcome.result_json) == ("completed", '{"said":"hi"}')
    assert ref == await ops.call(call(token))  # the same call
    # Repeating the call attaches to the ended call: its outcome comes back with it.
    again_ref, again = await ops.call_and_wait(call(token), 5_000)
    assert again_ref == ref and (again.status, again.result_json) == (
        outcome.status,
        '{"said":"hi"}',
    )
    # Without a provider, the wait ends "pending" and the call stays admitted.
    _, waiting = await ops.call_and_wait(call(token, call_id="later"), 50)
    assert waiting.status == "pending"


async def test_resolve_many_reads_named_or_every_active_toolset(ops: RegistryOperations) -> None:
    b = await ops.register(registration(echo_toolset("b")))
    await ops.register(registration(echo_toolset("a")))
    withdrawn = await ops.register(registration(echo_toolset("c")))
    await ops.unregister("c", withdrawn.registration_token)
    every = await ops.resolve_many(None)
    assert [name for name, _ in every] == ["a", "b"] == await ops.list_toolsets()
    named = await ops.resolve_many(["b", "c", "missing"])
    assert [name for name, _ in named] == ["b", "c", "missing"]
    entry = named[0][1]
    assert entry is not None and entry.registration_token == b.registration_token
    assert entry.toolset == echo_toolset("b")
    assert named[1][1] is None and named[2][1] is None


# --- over HTTP ---------------------------------------------------------------------------------


async def publish(
    client: HttpRegistryClient, declaration: Any, revision: str = "r1", incarnation: str = "i1"
) -> str:
    """Register ``declaration`` as provider p1 (incarnation ``incarnation``); its token."""
    done = await client.register(
        declaration,
        schema_fingerprint=schema_fingerprint(declaration),
        revision=revision,
        provider_id="p1",
        incarnation_id=incarnation,
        lease_ms=5_000,
    )
    return done.registration_token


async def post(url: str, path: str, body: Any) -> httpx2.Response:
    async with httpx2.AsyncClient(base_url=url, timeout=10) as http:
        return await http.post(
            path, content=json.dumps(body), headers={"content-type": "application/json"}
        )


async def test_batch_resolve_answers_exactly_the_resolve_answers(registry: Running) -> None:
    client = HttpRegistryClient(registry.url)
    for name in ("b", "a"):
        await publish(client, echo_toolset(name))
    answer = await post(registry.url, "/v1/toolsets/resolve_many", {"toolsets": None})
    entries = api.ResolveManyResponse.model_validate_json(answer.content).toolsets
    assert [(e.name, e.status) for e in entries] == [("a", "resolved"), ("b", "resolved")]
    for entry in entries:
        single = await post(registry.url, "/v1/toolsets/resolve", {"toolset": entry.name})
        assert (entry.answer or "").encode() == single.content  # byte for byte
    digests = {e.name: hashlib.sha256((e.answer or "").encode()).hexdigest() for e in entries}
    answer = await post(
        registry.url,
        "/v1/toolsets/resolve_many",
        {"toolsets": ["b", "a", "missing"], "known": {"a": digests["a"], "b": "0" * 64}},
    )
    entries = api.ResolveManyResponse.model_validate_json(answer.content).toolsets
    assert [(e.name, e.status) for e in entries] == [
        ("b", "resolved"),  # the digest the client gave is not this answer's
        ("a", "unchanged"),
        ("missing", "not_found"),
    ]
    assert entries[1].answer is None and entries[2].message == 'toolset "missing" not found'

    # The client names the answers it holds and hands them out again when unchanged.
    listed = await client.resolve_toolsets()
    single = {name: await client.resolve_toolset(name) for name in ("a", "b")}
    again = await client.resolve_toolsets()
    assert [name for name, _ in listed] == [name for name, _ in again] == ["a", "b"]
    for (name, before), (_, after) in zip(listed, again, strict=True):
        assert not isinstance(after, RegistryError) and not isinstance(before, RegistryError)
        assert after is single[name]  # unchanged: the answer held, not a new one
        assert after.digest == before.digest == digests[name]
    await client.aclose()


async def test_the_client_keeps_answers_as_the_text_the_registry_sent(registry: Running) -> None:
    """What the client holds is the answer's bytes (its tools are parsed when compiled), for a
    single resolve and a batch alike; reading ``toolset`` parses the declaration afresh."""
    client = HttpRegistryClient(registry.url)
    declaration = echo_toolset("a")
    await publish(client, declaration)
    single = await client.resolve_toolset("a")
    ((_, batch),) = await client.resolve_toolsets()
    sent = await post(registry.url, "/v1/toolsets/resolve", {"toolset": "a"})
    for resolved in (single, batch):
        assert not isinstance(resolved, RegistryError)
        assert isinstance(resolved.declared, ToolsetText)
        assert resolved.declared.text == sent.content
        assert resolved.digest == hashlib.sha256(sent.content).hexdigest()
        assert resolved.toolset == declaration and resolved.toolset is not resolved.toolset
    await client.aclose()


async def test_a_changed_toolset_is_never_answered_unchanged(registry: Running) -> None:
    client = HttpRegistryClient(registry.url)
    old = echo_toolset(description="The first description.")
    new = echo_toolset(description="The second description.")
    registered = []
    for declaration, revision in ((old, "r1"), (new, "r2")):
        registered.append(await publish(client, declaration, revision, revision))
        if revision == "r1":
            ((_, held),) = await client.resolve_toolsets()
            assert not isinstance(held, RegistryError) and held.toolset == old
            await client.release("echo", registered[0], "p1", "r1")
    ((_, now),) = await client.resolve_toolsets()  # the client still names the old digest
    assert not isinstance(now, RegistryError)
    assert now is not held and now.digest != held.digest
    assert (now.toolset, now.registration_token) == (new, registered[1])
    # The same declaration under another revision is another admission: another answer too.
    await client.release("echo", registered[1], "p1", "r2")
    await publish(client, new, "r3", "r3")
    ((_, third),) = await client.resolve_toolsets()
    assert not isinstance(third, RegistryError)
    assert third.registration_token not in registered and third.digest != now.digest
    await client.aclose()


async def test_conditional_resolves_racing_a_re_registration(registry: Running) -> None:
    """Resolves that name the old answer's digest while the toolset is replaced: each answer
    is one admission's (declaration and token together), ``unchanged`` only while the old
    admission is current, and never once the replacement was acknowledged."""
    client = HttpRegistryClient(registry.url)
    old, new = echo_toolset(version="1"), echo_toolset(version="2")
    first = await publish(client, old)
    ((_, held),) = await client.resolve_toolsets()
    assert not isinstance(held, RegistryError)
    tokens = {
        registration_token(schema_fingerprint(old), "r1"): old,
        registration_token(schema_fingerprint(new), "r2"): new,
    }
    replaced_at: list[float] = []
    seen: list[tuple[float, str, str | None]] = []

    async def resolver() -> None:
        while not replaced_at or time.monotonic() < replaced_at[0] + 0.3:
            started = time.monotonic()
            answer = await post(
                registry.url,
                "/v1/toolsets/resolve_many",
                {"toolsets": ["echo"], "known": {"echo": held.digest}},
            )
            (entry,) = api.ResolveManyResponse.model_validate_json(answer.content).toolsets
            seen.append((started, entry.status, entry.answer))

    async def replace() -> None:
        await asyncio.sleep(0.1)
        await client.release("echo", first, "p1", "i1")
        await publish(client, new, "r2", "i2")
        replaced_at.append(time.monotonic())

    await asyncio.wait_for(asyncio.gather(*(resolver() for _ in range(4)), replace()), 60)
    await client.aclose()
    statuses = {status for _, status, _ in seen}
    assert statuses == {"unchanged", "resolved"}, statuses  # both sides of the race were seen
    for started, status, text in seen:
        if status == "unchanged":
            assert started < replaced_at[0]
            continue
        assert status == "resolved" and text is not None
        answer = api.ResolveResponse.model_validate_json(text)
        # Declaration and token from one read: the token is the declaration's own.
        assert tokens[answer.registration_token] == answer.toolset
        if started > replaced_at[0]:
            assert answer.toolset == new


async def test_completions_sent_together_get_one_answer_each(registry: Running) -> None:
    client = HttpRegistryClient(registry.url)
    token = await publish(client, echo_toolset())
    from agentgen.runtime.registry.client import ToolCallMeta

    client.call_wait_ms = 0
    refs = [
        await client.call_resolved_tool(
            toolset="echo",
            tool="echo.say",
            payload_json='{"text":"hi"}',
            meta=ToolCallMeta(run_id="r", tool_call_id=f"c{n}"),
            expected_registration_token=token,
        )
        for n in range(3)
    ]
    claimed = await client.claim(
        "echo", token, "p1", "i1", max_calls=16, wait_ms=1_000, operation_id="op-1"
    )
    assert [c.tool_use_id for c in claimed] == [r.tool_use_id for r in refs]
    refusals = await client.complete_many(
        "echo",
        "p1",
        "i1",
        [
            api.CompletionBody(tool_use_id=refs[0].tool_use_id, status="completed",
                               result_json='{"said":"0"}'),
            api.CompletionBody(tool_use_id=refs[1].tool_use_id, status="completed",
                               result_json="not json"),
            api.CompletionBody(tool_use_id=refs[2].tool_use_id, status="failed",
                               result_json='{"code":"x"}', message="no"),
        ],
    )  # fmt: skip
    assert refusals[0] is None and refusals[2] is None
    assert refusals[1] is not None and refusals[1].code == "validation_error"
    outcomes = [await client.poll_result(ref, wait_ms=1_000) for ref in refs]
    assert [o.status for o in outcomes] == ["completed", "pending", "failed"]
    assert outcomes[0].result_json == '{"said":"0"}' and outcomes[2].message == "no"
    await client.aclose()


# --- the SQLite store --------------------------------------------------------------------------


async def test_sqlite_hands_out_no_result_before_its_commit(tmp_path: Path) -> None:
    """Operations share the loop turn's transaction; if it cannot commit, none of them is
    believed: each fails (service unavailable), and nothing they wrote is kept."""
    store = SQLiteStore(str(tmp_path / "registry.db"))
    await store.open()
    db = store._db
    assert db is not None
    db.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
    db.execute(
        "CREATE TABLE child (parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)"
    )
    db.execute("PRAGMA foreign_keys = ON")

    def put(values: Mapping[str, str | None], now: int) -> Change[str]:
        return Change("written", writes={"k": Write("v")})

    # Both in the same turn of the loop, so in the same transaction; the orphan row makes its
    # commit fail (the deferred foreign key is checked then).
    orphan = store._run(lambda db: db.execute("INSERT INTO child VALUES (1)"), writes=True)
    written = store._run(lambda db: _decide(db, ["k"], put), writes=True)
    for outcome in (orphan, written):
        with pytest.raises(StoreError, match="FOREIGN KEY constraint failed"):
            await outcome
    assert await store.get("k") is None
    assert await store.transact(["k"], put) == "written"  # the next transaction is fine
    assert await store.get("k") == "v"
    await store.close()


async def test_sqlite_checkpoints_its_log_on_a_thread_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "registry.db"
    store = SQLiteStore(str(path))
    await store.open()
    ops = RegistryOperations(store, FAST)
    token = (await ops.register(registration())).registration_token
    for number in range(50):
        await ops.call(call(token, call_id=f"c{number}"))
    checkpointer = store._checkpointer
    assert checkpointer is not None and checkpointer.thread.is_alive()
    await store.close()
    assert not checkpointer.thread.is_alive()
    # Everything was moved into the database and the log truncated.
    wal = tmp_path / "registry.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    reopened = SQLiteStore(str(path))
    await reopened.open()
    assert await RegistryOperations(reopened, FAST).list_toolsets() == ["echo"]
    await reopened.close()


async def test_a_new_sqlite_store_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    # It holds every call's payload and result: other users of the machine may not read it,
    # whatever the umask (SQLite gives its log and shared memory the database's permissions).
    import os

    previous = os.umask(0o022)
    try:
        store = SQLiteStore(str(tmp_path / "new" / "registry.db"))
        await store.open()
        ops = RegistryOperations(store, FAST)
        token = (await ops.register(registration())).registration_token
        await ops.call(call(token, call_id="c1"))
        files = sorted((tmp_path / "new").iterdir())
        assert [f.name for f in files] == ["registry.db", "registry.db-shm", "registry.db-wal"]
        assert {f.name: f.stat().st_mode & 0o777 for f in files} == {f.name: 0o600 for f in files}
        await store.close()
        # An existing file keeps the permissions its operator gave it.
        shared = tmp_path / "shared.db"
        shared.touch(mode=0o640)
        os.chmod(shared, 0o640)
        other = SQLiteStore(str(shared))
        await other.open()
        await other.close()
        assert shared.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(previous)
