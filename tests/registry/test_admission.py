"""SPEC H1–H4 / goa-ai H127–H148: the admission rules, against every store (parametrised).

Each test runs on SQLite (a file and ``:memory:``) and on a real Redis: the stores only make a
rule's read-decide-write atomic, so they must give the same answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import unicodedata

import pytest

from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.fingerprint import registration_token, schema_fingerprint
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.contracts.wire import tool_schema
from agentgen.runtime.registry import admission
from agentgen.runtime.registry.admission import Limits, catalog_key
from agentgen.runtime.registry.auth import LOCAL
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.operations import CatalogCorruptError, RegistryOperations
from agentgen.runtime.registry.store import Change, Store, Write
from agentgen.runtime.search.analysis import SEARCH_VERSION
from agentgen.runtime.search.document import SearchDocument
from tests.registry.conftest import FAST
from tests.registry.helpers import SAY, call, echo_toolset, registration


@pytest.fixture
def ops(store: Store) -> RegistryOperations:
    return RegistryOperations(store, FAST)


async def refused(code: str, coro: object) -> RegistryError:
    with pytest.raises(RegistryError) as info:
        await coro  # type: ignore[misc]
    assert info.value.code == code, info.value
    return info.value


async def claim(
    ops: RegistryOperations, token: str, *, provider: str = "p1", incarnation: str = "i1",
    op: str = "op-1", wait_ms: int = 1_000, toolset: str = "echo",
) -> list[str]:  # fmt: skip
    calls = await ops.claim(toolset, token, provider, incarnation, 16, wait_ms, op)
    return [c.tool_use_id for c in calls]


# --- registrations -----------------------------------------------------------------------------


async def test_identical_registration_same_token_and_replicas_add_leases(
    ops: RegistryOperations, store: Store
) -> None:
    first = await ops.register(registration())
    second = await ops.register(registration(provider="p2", incarnation="i2"))
    assert first.registration_token == second.registration_token
    fp = schema_fingerprint(echo_toolset())
    assert first.registration_token == registration_token(fp, "r1")
    raw = await store.get(catalog_key("echo"))
    assert raw is not None
    assert sorted(json.loads(raw)["provider_leases"]) == ["p1\x00i1", "p2\x00i2"]
    toolset, token = await ops.resolve("echo")
    assert token == first.registration_token and toolset == echo_toolset()


async def test_a_toolset_registered_again_is_not_compiled_again_and_compiles_off_the_loop(
    ops: RegistryOperations, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A provider restarting registers the same declaration again (2,000 tools: half a second
    # to compile), and compiling on the event loop would stall every other request meanwhile.
    compiled_in: list[int] = []
    compile_toolset = admission.compile_toolset

    def counted(toolset: ToolsetDeclaration) -> dict[str, ToolSpec]:
        compiled_in.append(threading.get_ident())
        return compile_toolset(toolset)

    monkeypatch.setattr(admission, "compile_toolset", counted)
    first = await ops.register(registration())
    again = await ops.register(registration(provider="p2", incarnation="i2"))
    assert first.registration_token == again.registration_token
    assert compiled_in and len(compiled_in) == 1
    assert compiled_in[0] != threading.get_ident()  # not the event loop's thread
    # Kept by fingerprint: what the provider claims is still checked against what it sent.
    await refused("validation_error", ops.register(registration(fingerprint="0" * 64)))
    # Another declaration is compiled.
    await ops.register(registration(echo_toolset("other")))
    assert len(compiled_in) == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"fingerprint": "0" * 64}, "does not match its declaration"),
        ({"wire": 99}, "wire protocol version must be 1, got 99"),
        ({"lease_ms": 10}, "outside the registry's bounds"),
        ({"revision": "bad revision"}, "revision 'bad revision' must match"),
        ({"provider": "-x"}, "provider_id '-x' must match"),
    ],
)
async def test_refused_registrations_write_nothing(
    ops: RegistryOperations, store: Store, change: dict[str, object], message: str
) -> None:
    error = await refused("validation_error", ops.register(registration(**change)))  # type: ignore[arg-type]
    assert message in error.message
    assert await store.get(catalog_key("echo")) is None
    assert await ops.list_toolsets() == []


async def test_invalid_json_schemas_and_schema_only_declarations_are_refused(
    ops: RegistryOperations, store: Store
) -> None:
    bad = echo_toolset(payload={"type": 12})
    error = await refused("validation_error", ops.register(registration(bad)))
    assert error.message.startswith("invalid tool schema: tool 'echo.say' payload")
    schema_only = echo_toolset()
    schema_only.tools[0].consumer_contract = None
    error = await refused("validation_error", ops.register(registration(schema_only)))
    assert "schema-only registration" in error.message
    assert await store.get(catalog_key("echo")) is None


async def test_replacement_waits_for_old_leases_and_retired_tokens_never_return(
    ops: RegistryOperations,
) -> None:
    old = await ops.register(registration(lease_ms=300))
    error = await refused("admission_blocked", ops.register(registration(revision="r2")))
    assert "1 live provider lease" in error.message
    await asyncio.sleep(0.4)  # the old lease expires on the store's clock
    new = await ops.register(registration(revision="r2", provider="p2"))
    assert new.registration_token != old.registration_token
    assert (await ops.resolve("echo"))[1] == new.registration_token
    await ops.release("echo", new.registration_token, "p2", "i1")
    await refused("admission_retired", ops.register(registration(revision="r1", provider="p9")))


async def test_release_lets_a_replacement_in_at_once(ops: RegistryOperations) -> None:
    old = await ops.register(registration(lease_ms=60_000))
    await ops.release("echo", old.registration_token, "p1", "i1")
    await ops.release("echo", old.registration_token, "p1", "i1")  # releasing twice: no change
    new = await ops.register(registration(echo_toolset(version="2"), revision="r2"))
    assert (await ops.resolve("echo"))[0].version == "2"
    assert new.registration_token != old.registration_token


async def test_unregister_needs_the_current_token(ops: RegistryOperations) -> None:
    old = await ops.register(registration(lease_ms=300))
    await asyncio.sleep(0.4)
    new = await ops.register(registration(revision="r2"))
    await refused("admission_conflict", ops.unregister("echo", old.registration_token))
    await ops.unregister("echo", new.registration_token)
    await ops.unregister("echo", new.registration_token)  # repeating it succeeds
    await refused("not_found", ops.resolve("echo"))
    assert await ops.list_toolsets() == []
    await refused("admission_retired", ops.register(registration(revision="r2")))
    await refused("not_found", ops.unregister("nothing", new.registration_token))


async def test_renew_and_drain(ops: RegistryOperations) -> None:
    done = await ops.register(registration(lease_ms=300))
    token = done.registration_token
    expires = await ops.renew("echo", token, "p1", "i1", 5_000)
    assert expires > done.lease_expires_at_ms
    await refused("validation_error", ops.renew("echo", token, "p1", "i1", 10))
    await refused("provider_lease_lost", ops.renew("echo", token, "p1", "other", 5_000))
    await ops.drain("echo", token, "p1", "i1", 2_000)
    assert not await ops.check_admission("echo", token)  # draining: not routable
    await refused("provider_lease_lost", ops.renew("echo", token, "p1", "i1", 5_000))
    # A draining incarnation cannot come back; a new incarnation can.
    await refused("provider_lease_lost", ops.register(registration()))
    await ops.register(registration(incarnation="i2"))
    assert await ops.check_admission("echo", token)


async def test_draining_again_never_moves_a_leases_end_later(ops: RegistryOperations) -> None:
    """A second drain (a transport retry, a provider stopped twice) kept a draining lease alive
    for another settle period each time: draining in a loop, for good."""
    token = (await ops.register(registration(lease_ms=60_000))).registration_token
    first = await ops.drain("echo", token, "p1", "i1", 2_000)
    assert await ops.drain("echo", token, "p1", "i1", 600_000) == first
    assert await ops.drain("echo", token, "p1", "i1", 2_000) == first  # a retry of the first
    # Earlier is taken: a provider done with its calls ends its drain at once.
    assert await ops.drain("echo", token, "p1", "i1", 0) < first
    # Draining may still lengthen a lease that was not draining (its settle time is given).
    other = (await ops.register(registration(incarnation="i2", lease_ms=300))).registration_token
    assert await ops.drain("echo", other, "p1", "i2", 60_000) > first


def test_a_drain_repeated_later_keeps_the_first_drains_end() -> None:
    token = "t" * 64
    entry = admission.Admission(
        state="active",
        schema_fingerprint="f",
        revision="r1",
        wire_protocol_version=1,
        registration_token=token,
        registered_at_ms=0,
        provider_leases={"p\x00i": admission.Lease(expires_at_ms=50_000)},
    )
    drained = admission.drain(entry, "echo", token, "p\x00i", 10_000, 1_000, FAST)
    assert drained.provider_leases["p\x00i"].expires_at_ms == 11_000
    again = admission.drain(drained, "echo", token, "p\x00i", 10_000, 9_000, FAST)
    assert again.provider_leases["p\x00i"] == admission.Lease(expires_at_ms=11_000, draining=True)


async def test_list_requires_every_tag_and_check_admission_answers_false(
    ops: RegistryOperations,
) -> None:
    a = await ops.register(registration(echo_toolset("a", tags=("hr", "eu"))))
    await ops.register(registration(echo_toolset("b", tags=("hr",))))
    assert await ops.list_toolsets() == ["a", "b"]
    assert await ops.list_toolsets(["hr"]) == ["a", "b"]
    assert await ops.list_toolsets(["hr", "eu"]) == ["a"]
    assert await ops.list_toolsets(["us"]) == []
    assert await ops.check_admission("a", a.registration_token)
    assert not await ops.check_admission("a", "f" * 64)
    assert not await ops.check_admission("missing", a.registration_token)
    error = await refused("not_found", ops.resolve("missing"))
    assert error.message == 'toolset "missing" not found'


async def test_a_search_count_no_text_can_give_is_refused_at_registration(
    ops: RegistryOperations,
) -> None:
    # A count of 10**400 was admitted, then every consumer's first tool search over the
    # catalog raised OverflowError.
    toolset = echo_toolset()
    contract = toolset.tools[0].consumer_contract
    assert contract is not None
    contract.search.version = SEARCH_VERSION
    contract.search.terms = {"say": [1, 0, 10**400, 0, 0]}
    error = await refused("validation_error", ops.register(registration(toolset)))
    assert "tool 'echo.say' search document: " in str(error)
    assert "counts the word 'say' about 2**1328 times in one field" in str(error)


async def test_search_finds_text_in_names_descriptions_and_tags_of_active_toolsets(
    ops: RegistryOperations,
) -> None:
    """goa-ai's catalog search: a case-insensitive substring of name, description or a tag."""
    payments = echo_toolset("payments", tags=("Finance", "eu"))
    payments.description = "Move MONEY between accounts."
    await ops.register(registration(payments))
    people = echo_toolset("people", tags=("hr",))
    people.description = "Employees and their managers."
    await ops.register(registration(people))
    gone = await ops.register(registration(echo_toolset("payroll", tags=("finance",))))
    assert await ops.search_toolsets("PAY") == ["payments", "payroll"]  # names
    assert await ops.search_toolsets("money") == ["payments"]  # descriptions
    assert await ops.search_toolsets("financ") == ["payments", "payroll"]  # tags
    assert await ops.search_toolsets("finance", ["eu"]) == ["payments"]  # and every tag
    assert await ops.search_toolsets("manager") == ["people"]
    assert await ops.search_toolsets("nothing like it") == []
    await ops.unregister("payroll", gone.registration_token)
    assert await ops.search_toolsets("pay") == ["payments"]  # withdrawn toolsets are not found
    await refused("validation_error", ops.search_toolsets(""))


async def test_search_reads_text_in_nfkc_as_tool_search_does(ops: RegistryOperations) -> None:
    # A decomposed "résumé" (as macOS and PDF copies write it) was not found by the word typed
    # composed, nor a fullwidth "ＰＤＦ" tag by "pdf": only case was ignored.
    cv = echo_toolset("cv")
    cv.description = unicodedata.normalize("NFD", "Parse a résumé.")
    await ops.register(registration(cv))
    await ops.register(registration(echo_toolset("docs", tags=("ＰＤＦ",))))
    assert await ops.search_toolsets("résumé") == ["cv"]
    assert await ops.search_toolsets(unicodedata.normalize("NFD", "RÉSUMÉ")) == ["cv"]
    assert await ops.search_toolsets("pdf") == ["docs"]
    assert await ops.search_toolsets("ｄｏｃｓ") == ["docs"]  # names too


@pytest.mark.parametrize("query", ["\u200c", "\u00ad\u200d", "\ufe0f\u2060"])
async def test_a_search_of_invisible_characters_alone_is_refused_as_an_empty_one(
    ops: RegistryOperations, query: str
) -> None:
    # Search reads text without invisible format characters (search version 4): a query of
    # such characters alone was the empty text, which every toolset contains, so it named the
    # whole catalog where the empty query is refused.
    await ops.register(registration(echo_toolset("payments")))
    await ops.register(registration(echo_toolset("people")))
    error = await refused("validation_error", ops.search_toolsets(query))
    assert "only invisible characters" in str(error)


async def test_corrupt_persisted_entries_are_reported_by_key(
    ops: RegistryOperations, store: Store
) -> None:
    await ops.register(registration())
    await ops.register(registration(echo_toolset("other")))
    assert await ops.verify_catalog() == 2
    raw = json.loads(await store.get(catalog_key("echo")) or "")
    raw["registration_token"] = "0" * 64
    tampered = dict(raw, toolset=dict(raw["toolset"], description="changed"))

    def corrupt(values: object, now: int) -> Change[None]:
        return Change(
            None,
            writes={
                catalog_key("echo"): Write(json.dumps(raw)),
                catalog_key("other"): Write(json.dumps(tampered | {"extra": 1})),
                catalog_key("third"): Write("{not json"),
            },
        )

    await store.transact([catalog_key("echo")], corrupt)
    with pytest.raises(CatalogCorruptError) as info:
        await ops.verify_catalog()
    keys = [key for key, _ in info.value.problems]
    assert keys == ["toolset:echo", "toolset:other", "toolset:third"]
    assert "registration token" in info.value.problems[0][1]
    assert "extra" in info.value.problems[1][1]
    assert "3 invalid catalog entries" in str(info.value)


# --- calls ---------------------------------------------------------------------------------


async def test_a_retried_claim_supersedes_the_request_still_waiting(
    ops: RegistryOperations, store: Store
) -> None:
    # A provider's long poll lost its connection and its client retried the claim (same
    # operation) while the registry's first request still waited: the first one took the next
    # call, in the provider's name, for a closed connection; the provider never ran it and the
    # consumer waited its whole timeout for outcome_unknown.
    from agentgen.runtime.registry.operations import _attempt_key, _op_key

    token = (await ops.register(registration())).registration_token
    attempt = _attempt_key(_op_key("echo", "p1\x00i1", "op-1"))

    async def attempt_changed(than: str | None) -> str:
        for _ in range(500):
            value = await store.get(attempt)
            if value is not None and value != than:
                return value
            await asyncio.sleep(0.01)
        raise AssertionError("the claim never started waiting")

    orphan = asyncio.create_task(claim(ops, token, wait_ms=3_000))
    first = await attempt_changed(None)
    retry = asyncio.create_task(claim(ops, token, wait_ms=3_000))
    await attempt_changed(first)
    ref = await ops.call(call(token))
    assert await retry == [ref["tool_use_id"]]
    assert await orphan == []
    assert await claim(ops, token, op="op-2", wait_ms=50) == []  # claimed once, by the retry


async def test_a_call_runs_once_and_its_result_is_delivered(ops: RegistryOperations) -> None:
    token = (await ops.register(registration())).registration_token
    ref = await ops.call(call(token))
    assert await ops.call(call(token)) == ref  # the same call attaches to the same record
    assert ref["registration_token"] == token
    assert ref["execution_deadline_ms"] < ref["result_expires_at_ms"]
    pending = await ops.await_result(ref["tool_use_id"], token, 50, caller=LOCAL)
    assert pending.status == "pending"
    assert await claim(ops, token) == [ref["tool_use_id"]]
    assert await claim(ops, token, op="op-2", wait_ms=50) == []  # never delivered twice
    # The same claim operation (a transport retry) gets the same calls back.
    assert await claim(ops, token, op="op-1") == [ref["tool_use_id"]]
    await ops.complete("echo", ref["tool_use_id"], "p1", "i1", "completed", '{"said":"hi"}', "")
    await ops.complete("echo", ref["tool_use_id"], "p1", "i1", "completed", '{"said":"hi"}', "")
    await refused(
        "provider_lease_lost",
        ops.complete("echo", ref["tool_use_id"], "p1", "i1", "completed", '{"said":"no"}', ""),
    )
    result = await ops.await_result(ref["tool_use_id"], token, 1_000, caller=LOCAL)
    assert (result.status, result.result_json) == ("completed", '{"said":"hi"}')


async def test_call_identity_conflicts_and_refusals(ops: RegistryOperations) -> None:
    token = (await ops.register(registration())).registration_token
    await ops.call(call(token))
    error = await refused("call_conflict", ops.call(call(token, payload={"text": "other"})))
    assert "a tool call ID names one call" in error.message
    error = await refused("validation_error", ops.call(call(token, call_id="c2", payload={})))
    assert "'text' is a required property" in error.message
    await refused("not_found", ops.call(call(token, call_id="c3", tool="echo.shout")))
    await refused("not_found", ops.call(call(token, call_id="c4", toolset="nothing")))
    # Refused calls left no record behind: nothing to claim but the first call.
    assert len(await claim(ops, token)) == 1


async def test_agent_tools_are_never_called_through_the_registry(
    ops: RegistryOperations,
) -> None:
    toolset = echo_toolset()
    agent_tool = tool_schema(
        tool_id="echo.delegate",
        title="Delegate",
        description="Ask the echo agent.",
        tags=(),
        payload_schema=SAY,
        payload_name=None,
        result_schema={"type": "string"},
        result_name=None,
        search=SearchDocument.from_text("echo.delegate Delegate Ask the echo agent."),
        kind="agent",
        agent_id="echo.agent",
    )
    toolset.tools.append(agent_tool)
    token = (await ops.register(registration(toolset))).registration_token
    error = await refused("validation_error", ops.call(call(token, tool="echo.delegate")))
    assert "child run" in error.message
    assert len(await claim(ops, token, wait_ms=50)) == 0  # nothing was admitted


async def test_calls_against_a_replaced_admission_are_not_admitted(
    ops: RegistryOperations,
) -> None:
    old = (await ops.register(registration())).registration_token
    pending = await ops.call(call(old, call_id="waiting"))
    await ops.release("echo", old, "p1", "i1")
    new = (await ops.register(registration(revision="r2", provider="p2"))).registration_token
    await refused("call_not_admitted", ops.call(call(old, call_id="late")))
    await refused("call_not_admitted", ops.call(call(old, call_id="late")))  # and stays so
    # The call admitted under the old token never runs against the new contract.
    assert await claim(ops, new, provider="p2", wait_ms=100) == []
    result = await ops.await_result(pending["tool_use_id"], old, 1_000, caller=LOCAL)
    assert result.status == "call_not_admitted"


async def test_a_claimed_call_whose_lease_is_lost_ends_outcome_unknown(
    ops: RegistryOperations,
) -> None:
    token = (await ops.register(registration())).registration_token
    ref = await ops.call(call(token))
    assert await claim(ops, token) == [ref["tool_use_id"]]
    await ops.release("echo", token, "p1", "i1")
    result = await ops.await_result(ref["tool_use_id"], token, 1_000, caller=LOCAL)
    assert result.status == "outcome_unknown"
    assert "do not retry" in result.message
    await refused(
        "provider_lease_lost",
        ops.complete("echo", ref["tool_use_id"], "p1", "i1", "completed", '{"said":"x"}', ""),
    )


async def test_overload_retry_keeps_the_admission(ops: RegistryOperations) -> None:
    token = (await ops.register(registration(lease_ms=300))).registration_token
    ref = await ops.call(call(token))
    use = ref["tool_use_id"]
    await refused("validation_error", ops.retry(use, token, caller=LOCAL))  # nothing to retry yet
    assert await claim(ops, token) == [use]
    await ops.report_overload("echo", use, "p1", "i1")
    assert (await ops.await_result(use, token, 1_000, caller=LOCAL)).status == "overloaded"
    assert (
        await ops.retry(use, token, caller=LOCAL) == ref
    )  # the same call: token, deadline, expiry
    assert await ops.retry(use, token, caller=LOCAL) == ref  # retrying twice changes nothing
    assert await claim(ops, token, op="op-2") == [use]
    await ops.report_overload("echo", use, "p1", "i1")
    await ops.release("echo", token, "p1", "i1")
    await ops.register(registration(revision="r2", provider="p2"))
    error = await refused("admission_conflict", ops.retry(use, token, caller=LOCAL))
    assert "not retried against another contract" in error.message
    await refused("admission_conflict", ops.retry(use, "e" * 64, caller=LOCAL))


async def test_draining_providers_take_no_new_calls(ops: RegistryOperations) -> None:
    token = (await ops.register(registration())).registration_token
    await ops.register(registration(provider="p2"))
    held = await ops.call(call(token, call_id="held"))
    assert await claim(ops, token) == [held["tool_use_id"]]
    await ops.drain("echo", token, "p1", "i1", 5_000)
    fresh = await ops.call(call(token, call_id="fresh"))
    assert await claim(ops, token, op="op-2", wait_ms=100) == []
    assert await claim(ops, token, provider="p2") == [fresh["tool_use_id"]]
    # The draining lease still completes what it holds.
    await ops.complete("echo", held["tool_use_id"], "p1", "i1", "failed", '{"code":"x"}', "no")
    result = await ops.await_result(held["tool_use_id"], token, 1_000, caller=LOCAL)
    assert (result.status, result.message) == ("failed", "no")


async def test_unclaimed_calls_fail_at_their_deadline(store: Store) -> None:
    ops = RegistryOperations(store, dataclasses.replace(FAST, call_timeout_ms=200))
    token = (await ops.register(registration())).registration_token
    ref = await ops.call(call(token))
    result = await ops.await_result(ref["tool_use_id"], token, 2_000, caller=LOCAL)
    assert result.status == "failed"
    assert json.loads(result.result_json or "")["code"] == "deadline_exceeded"
    assert "it did not run" in result.message


async def test_declarations_are_returned_as_registered(ops: RegistryOperations) -> None:
    declaration = echo_toolset(version="1.2.3", tags=("b", "a"))
    await ops.register(registration(declaration))
    resolved, _ = await ops.resolve("echo")
    assert isinstance(resolved, ToolsetDeclaration)
    assert resolved.to_json() == declaration.to_json()


def test_limits_default_to_the_reference_bounds() -> None:
    assert (Limits().min_lease_ms, Limits().max_lease_ms) == (45_000, 86_400_000)
