"""Compiled registry contracts are cached by wire form, and only ever served for it."""

from __future__ import annotations

import asyncio
import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.app import Runtime
from agentgen.runtime.contracts import compiler
from agentgen.runtime.contracts.cache import ContractCache, wire_form
from agentgen.runtime.contracts.codecs import PayloadError
from agentgen.runtime.contracts.declarations import ContractError, ToolSchema, ToolsetDeclaration
from agentgen.runtime.contracts.lazy_codec import LazySchemaCodec
from agentgen.runtime.contracts.schema_check import check_schema
from agentgen.runtime.contracts.toolset_text import ToolsetText
from agentgen.runtime.messages import ToolCallPart
from agentgen.runtime.pacing import Pacer
from agentgen.runtime.registry.answers import kept_answer
from agentgen.runtime.registry.api import ResolveResponse
from agentgen.runtime.registry.client import ResolvedToolset
from agentgen.runtime.runs.accepted import AcceptedCall
from agentgen.runtime.runs.catalog import PlanningCatalog, RegistryReadError
from agentgen.runtime.runs.policy import merge
from examples.company.gen.assistant.agents import generalist
from tests.runtime.agents import ScriptedPlanner, echo_handler, provider_toolset, registry_runtime
from tests.runtime.fake_registry import FakeRegistry

AGENT = "assistant.generalist"


def records_tool(name: str = "records.search") -> ToolSchema:
    return next(t for t in provider_toolset().tools if t.name == name)


async def activity(rt: Any, cache: ContractCache) -> PlanningCatalog:
    """What the run loop does for one planning activity, with the test's own cache."""
    registration = rt.agent(AGENT)
    catalog = PlanningCatalog(rt, registration, {}, merge(RunPolicy()).tools, cache=cache)
    await registration.definition.registry_tools.resolve(catalog)
    return catalog


def consuming_runtime(registry: FakeRegistry | None = None) -> tuple[Any, FakeRegistry]:
    rt, registry = registry_runtime(registry)
    generalist.register_generalist_agent(
        rt,
        generalist.GeneralistAgentConfig(planner=ScriptedPlanner([])),
    )
    return rt, registry


def parameters(catalog: PlanningCatalog, tool_id: str) -> dict[str, Any]:
    definition = next(d for d in catalog.advertised_tool_definitions() if d.id == tool_id)
    return definition.parameters()


# ------------------------------------------------------------------ keys: the wire form


def test_an_unchanged_declaration_is_compiled_once() -> None:
    cache = ContractCache()
    first = cache.tool(records_tool(), toolset="records")
    again = cache.tool(records_tool(), toolset="records")  # an equal, separate object
    assert again is first
    assert (cache.compiles, cache.hits) == (1, 1)


def test_the_same_tool_under_another_toolset_name_is_another_entry() -> None:
    cache = ContractCache()
    one = cache.tool(records_tool(), toolset="records")
    other = cache.tool(records_tool(), toolset="svc.records")
    assert other is not one and other.spec.toolset == "svc.records"


def test_a_changed_schema_under_the_same_name_is_compiled_again() -> None:
    cache = ContractCache()
    before = cache.tool(records_tool(), toolset="records")
    changed = records_tool()
    changed.payload_schema["properties"]["query"]["maxLength"] = 5
    after = cache.tool(changed, toolset="records")
    assert after is not before and cache.compiles == 2
    with pytest.raises(PayloadError, match="query"):
        after.spec.payload.codec.decode('{"query": "longer than five"}')
    before.spec.payload.codec.decode('{"query": "longer than five"}')  # the old one still holds


def test_nan_and_null_never_share_a_wire_form() -> None:
    with_null, with_nan = records_tool(), records_tool()
    with_null.payload_schema["properties"]["limit"]["default"] = None
    with_nan.payload_schema["properties"]["limit"]["default"] = float("nan")
    assert wire_form(with_null) != wire_form(with_nan)
    cache = ContractCache()
    cache.tool(with_null, toolset="records")
    with pytest.raises(
        ContractError, match="the number nan at /properties/limit/default is not finite; fix"
    ):
        cache.tool(with_nan, toolset="records")


def test_the_saved_contract_is_the_declarations_wire_json() -> None:
    tool = records_tool()
    entry = ContractCache().tool(tool, toolset="records")
    assert entry.declaration() == tool.to_json()
    entry.declaration()["name"] = "changed"  # every caller gets its own copy
    assert entry.declaration() == tool.to_json()


def test_a_declaration_that_does_not_compile_is_never_stored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = ContractCache()
    compiled: list[str] = []
    real = compiler.compile

    def counting(declaration: ToolSchema, *, toolset: str) -> Any:
        compiled.append(declaration.name)
        return real(declaration, toolset=toolset)

    monkeypatch.setattr(compiler, "compile", counting)
    bad = records_tool()
    bad.payload_schema["type"] = 5
    messages = []
    for _ in range(3):
        with pytest.raises(ContractError, match="invalid JSON Schema") as refused:
            cache.tool(bad, toolset="records")
        messages.append(str(refused.value))
    # Refused once by the checks, then by the remembered refusal (same message), never stored.
    assert len(set(messages)) == 1
    assert compiled == ["records.search"]
    assert len(cache) == 0 and (cache.compiles, cache.hits) == (1, 2)
    # The same declaration under another toolset name, or fixed, is checked afresh.
    with pytest.raises(ContractError):
        cache.tool(bad, toolset="svc.records")
    assert cache.tool(records_tool(), toolset="records").spec.id == "records.search"
    assert len(compiled) == 3 and len(cache) == 1


def test_refusals_are_bounded_too() -> None:
    cache = ContractCache(max_refusals=1)
    first, second = records_tool(), records_tool("records.lookup")
    for bad in (first, second):
        bad.payload_schema["type"] = 5
    for bad in (first, second, first):  # the second refusal pushed the first out
        with pytest.raises(ContractError):
            cache.tool(bad, toolset="records")
    assert (cache.compiles, cache.hits) == (3, 0)


def test_the_cache_is_bounded_and_forgets_the_least_recently_used() -> None:
    cache = ContractCache(max_tools=2)
    lookup, search, analyze = (
        records_tool(f"records.{n}") for n in ("lookup", "search", "analyze")
    )
    cache.tool(lookup, toolset="records")
    cache.tool(search, toolset="records")
    cache.tool(lookup, toolset="records")  # lookup is now the most recently used
    cache.tool(analyze, toolset="records")  # evicts search
    assert len(cache) == 2
    compiles = cache.compiles
    cache.tool(lookup, toolset="records")
    assert cache.compiles == compiles
    cache.tool(search, toolset="records")
    assert cache.compiles == compiles + 1


def test_a_cache_must_hold_something() -> None:
    with pytest.raises(ValueError, match="at least one entry"):
        ContractCache(max_tools=0)


def test_threads_compiling_one_declaration_get_one_entry() -> None:
    cache = ContractCache()
    with ThreadPoolExecutor(8) as pool:
        entries = list(pool.map(lambda _: cache.tool(records_tool(), toolset="records"), range(32)))
    assert all(entry is entries[0] for entry in entries)
    assert len(cache) == 1


# ------------------------------------------------------------------ lazy codecs, checks


def test_codecs_are_made_on_first_use_and_still_validate() -> None:
    entry = ContractCache().tool(records_tool(), toolset="records")
    codec = entry.spec.payload.codec
    assert isinstance(codec, LazySchemaCodec) and not codec.built
    with pytest.raises(PayloadError, match="records.search payload") as error:
        codec.decode('{"limit": 1}')
    assert "'query' is a required property" in str(error.value)
    assert codec.built
    assert codec.decode('{"query": "x"}') == {"query": "x"}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"type": 5}, "is not valid under any of the given schemas"),
        ({"properties": {"q": {"pattern": "["}}}, "is not a 'regex'"),
        ({"required": ["a", "a"]}, "has non-unique elements"),
        ({"minimum": "zero"}, "is not of type 'number'"),
    ],
)
def test_an_invalid_schema_is_refused_when_the_catalog_is_built(
    change: dict[str, Any], reason: str
) -> None:
    declaration = provider_toolset()
    declaration.tools[0].payload_schema.update(change)
    rt, registry = consuming_runtime()
    registry.publish(declaration, echo_handler)
    with pytest.raises(RegistryReadError, match="invalid JSON Schema") as error:
        asyncio.run(activity(rt, ContractCache()))
    assert reason in str(error.value)


schema_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["a", "[", "^x$", "string"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("ab", max_size=2), inner),
    max_leaves=6,
)
keywords = st.sampled_from(
    [
        "type", "properties", "required", "items", "pattern", "minimum", "enum", "anyOf",
        "additionalProperties", "patternProperties", "minLength", "$ref", "const", "not",
    ]
)  # fmt: skip
schemas = (
    st.recursive(
        st.dictionaries(keywords, schema_values, max_size=3),
        lambda inner: st.dictionaries(
            keywords, inner | schema_values | st.lists(inner, max_size=2)
        ),
        max_leaves=8,
    )
    | st.booleans()
)


@settings(max_examples=400, deadline=None)
@given(schemas)
def test_the_fast_check_agrees_with_jsonschema(schema: Any) -> None:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
        expected = None
    except jsonschema.SchemaError as exc:
        expected = exc.message
    try:
        check_schema(schema)
        got = None
    except jsonschema.SchemaError as exc:
        got = exc.message
    assert got == expected


# ------------------------------------------------------------------ planning activities


async def test_the_next_activity_with_the_same_tokens_compiles_nothing() -> None:
    rt, registry = consuming_runtime()
    registry.publish(provider_toolset(), echo_handler)
    cache = ContractCache()
    await activity(rt, cache)
    assert cache.compiles == 3
    await activity(rt, cache)
    assert cache.compiles == 3 and cache.hits == 3


async def test_a_changed_schema_under_the_same_token_is_never_served_from_the_cache() -> None:
    rt, registry = consuming_runtime()
    token = registry.publish(provider_toolset(), echo_handler)
    cache = ContractCache()
    catalog = await activity(rt, cache)
    assert "maxLength" not in parameters(catalog, "records.search")["properties"]["query"]
    # The registry changes the declaration but keeps its admission (and so its token).
    tool = next(
        t for t in registry.admissions["records"].declaration.tools if t.name.endswith("search")
    )
    tool.payload_schema["properties"]["query"]["maxLength"] = 3
    assert registry.admissions["records"].token == token
    catalog = await activity(rt, cache)
    assert parameters(catalog, "records.search")["properties"]["query"]["maxLength"] == 3
    assert cache.compiles == 4  # only the changed tool
    accepted = catalog.accept(ToolCallPart("c1", "records.search", '{"query": "abcd"}'))
    assert isinstance(accepted, AcceptedCall)
    with pytest.raises(PayloadError, match="query"):
        accepted.spec.payload.codec.decode(accepted.call.arguments)


async def test_a_new_token_or_one_changed_tool_recompiles_only_what_changed() -> None:
    rt, registry = consuming_runtime()
    registry.publish(provider_toolset(), echo_handler)
    cache = ContractCache()
    await activity(rt, cache)
    registry.publish(provider_toolset(), echo_handler, revision="r2")  # new token, same tools
    catalog = await activity(rt, cache)
    assert cache.compiles == 3
    accepted = catalog.accept(ToolCallPart("c1", "records.lookup", '{"id": "1"}'))
    assert isinstance(accepted, AcceptedCall) and accepted.binding is not None
    assert accepted.binding.registration_token == registry.admissions["records"].token
    changed = provider_toolset(description="new toolset description")
    changed.tools[0].description = "Looks a record up, now better."
    registry.publish(changed, echo_handler, revision="r3")
    await activity(rt, cache)
    assert cache.compiles == 4


class DigestingClient:
    """A client that parses each answer once and reports the digest of what it parsed."""

    def __init__(self, registry: FakeRegistry) -> None:
        self.registry = registry
        self.parsed: dict[tuple[str, str], ResolvedToolset] = {}

    async def list_toolsets(self) -> list[str]:
        return await self.registry.list_toolsets()

    async def resolve_toolset(self, name: str) -> ResolvedToolset:
        admission = self.registry.admissions[name]
        key = (name, admission.token)
        if key not in self.parsed:
            # The answer as a registry would send it: the declaration and its token.
            body = admission.declaration.model_dump_json(by_alias=True).encode()
            answer = body + admission.token.encode()
            self.parsed[key] = ResolvedToolset(
                ToolsetDeclaration.model_validate_json(body),
                admission.token,
                hashlib.sha256(answer).hexdigest(),
            )
        return self.parsed[key]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.registry, name)


async def test_a_toolset_with_a_known_digest_is_found_without_hashing_its_tools() -> None:
    registry = FakeRegistry()
    registry.publish(provider_toolset(), echo_handler)
    rt = Runtime()
    rt.register_registry("company", DigestingClient(registry), registry)
    generalist.register_generalist_agent(
        rt,
        generalist.GeneralistAgentConfig(planner=ScriptedPlanner([])),
    )
    cache = ContractCache()
    first = await activity(rt, cache)
    second = await activity(rt, cache)
    assert (cache.compiles, cache.hits) == (3, 0)  # the second found the whole toolset
    assert [d.id for d in second.advertised_tool_definitions()] == [
        d.id for d in first.advertised_tool_definitions()
    ]
    registry.publish(provider_toolset(), echo_handler, revision="r2")  # new answer, same tools
    await activity(rt, cache)
    assert (cache.compiles, cache.hits) == (3, 3)


async def test_concurrent_activities_share_compiled_contracts() -> None:
    rt, registry = consuming_runtime()
    for name in ("records", "billing", "crm"):
        registry.publish(provider_toolset(name), echo_handler)
    cache = ContractCache()
    catalogs = await asyncio.gather(*(activity(rt, cache) for _ in range(4)))
    assert cache.compiles == 9
    specs = [{d.id: d for d in c.advertised_tool_definitions()} for c in catalogs]
    assert all(s == specs[0] for s in specs)


async def test_a_large_build_gives_the_event_loop_turns() -> None:
    rt, registry = consuming_runtime()
    for index in range(40):
        registry.publish(provider_toolset(f"set{index}"), echo_handler)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0)
            ticks += 1

    task = asyncio.create_task(ticker())
    registration = rt.agent(AGENT)
    catalog = PlanningCatalog(rt, registration, {}, merge(RunPolicy()).tools, cache=ContractCache())
    catalog._pacer = Pacer(slice=0.0)  # yield at every opportunity
    await registration.definition.registry_tools.resolve(catalog)
    task.cancel()
    assert catalog._pacer.yields >= 120  # after every tool and every toolset
    assert ticks >= 120


def test_a_checkpoint_restores_through_the_cache() -> None:
    tool = records_tool("records.lookup")
    call = ToolCallPart("c1", "records.lookup", json.dumps({"id": "1"}))
    data = {
        "call": {"call_id": "c1", "tool_id": "records.lookup", "arguments": call.arguments},
        "tool": "records.lookup",
        "toolset": "records",
        "binding": {
            "registry": "company",
            "toolset": "records",
            "registration_token": "t" * 64,
            "version": "1.0.0",
            "declaration": tool.to_json(),
            "partner_declaration": None,
        },
    }
    first = AcceptedCall.from_json(data, lambda _: None)
    again = AcceptedCall.from_json(data, lambda _: None)
    assert again.spec is first.spec
    assert first.spec.payload.codec.decode(call.arguments) == {"id": "1"}


async def test_an_unchanged_catalog_advertises_the_same_object_again() -> None:
    rt, registry = consuming_runtime()
    registry.publish(provider_toolset(), echo_handler)
    cache = ContractCache()
    first, second = await activity(rt, cache), await activity(rt, cache)
    assert second.advertised_tools() is first.advertised_tools()
    listed = second.advertised_tool_definitions()
    assert (
        listed == list(first.advertised_tools())
        and listed is not first.advertised_tool_definitions()
    )
    changed = provider_toolset()
    changed.tools[1].description = "Search records, better."
    registry.publish(changed, echo_handler)
    third = await activity(rt, cache)
    assert third.advertised_tools() is not first.advertised_tools()
    assert (
        "better"
        in next(d for d in third.advertised_tools() if d.id == "records.search").description
    )


def test_a_declaration_holding_values_that_are_not_json_is_a_contract_error() -> None:
    tool = records_tool()
    tool.payload_schema["default"] = object()
    with pytest.raises(ContractError, match="'records.search' declaration is not JSON"):
        ContractCache().tool(tool, toolset="records")


async def test_definitions_are_made_while_toolsets_are_read_not_all_at_once_after() -> None:
    rt, registry = consuming_runtime()
    registry.publish(provider_toolset(), echo_handler)
    catalog = await activity(rt, ContractCache())
    entries = [entry for entry, _ in catalog._dynamic.values()]
    assert entries and all(entry.advertised is not None for entry in entries)
    listed = catalog.advertised_tools()
    assert len(listed) >= len(entries)
    assert all(any(made is entry.advertised for made in listed) for entry in entries)


async def test_an_activity_restricted_to_one_tool_makes_only_its_definition() -> None:
    rt, registry = consuming_runtime()
    registry.publish(provider_toolset(), echo_handler)
    registration = rt.agent(AGENT)
    first = provider_toolset().tools[0].name
    policy = merge(RunPolicy(restrict_to_tool=first)).tools
    catalog = PlanningCatalog(rt, registration, {}, policy, cache=ContractCache())
    await registration.definition.registry_tools.resolve(catalog)
    made = {entry.spec.id for entry, _ in catalog._dynamic.values() if entry.advertised}
    assert made == {first}
    assert [tool.id for tool in catalog.advertised_tools() if tool.id in made] == [first]


# ------------------------------------------------------------------ concurrent first reads


class CountedText(ToolsetText):
    """A registry answer kept as text that counts how often it is parsed."""

    parsed = 0

    def declaration(self) -> ToolsetDeclaration:
        self.parsed += 1
        return super().declaration()


def counted_answer() -> tuple[CountedText, str]:
    """The records toolset's resolve answer as a client keeps it, and its digest."""
    body = ResolveResponse(toolset=provider_toolset(), registration_token="a" * 64)
    answer = kept_answer(body.model_dump_json().encode())
    text = answer.declared
    assert isinstance(text, ToolsetText) and answer.digest is not None
    counted = CountedText(
        text.text,
        name=text.name,
        version=text.version,
        description=text.description,
        tags=text.tags,
        within=text.within,
    )
    return counted, answer.digest


async def test_concurrent_first_reads_of_one_answer_build_it_once() -> None:
    """Runs that start together read the same registry answer (the same digest) at once:
    the first builds it, the others wait for it, instead of each parsing and hashing every
    tool of it (at 10,000 tools, a second each). The builder yields after every tool, so
    every other reader arrives while it builds."""
    text, digest = counted_answer()
    cache = ContractCache()
    built = await asyncio.gather(
        *(cache.toolset(text, name="records", digest=digest, pacer=Pacer(0.0)) for _ in range(50))
    )
    assert all(toolset is built[0] for toolset in built)
    assert (text.parsed, cache.compiles, cache.hits) == (1, 3, 0)


async def test_readers_waiting_for_a_cancelled_build_build_it_themselves() -> None:
    """The first reader's cancellation is its own: the readers that waited for it get the
    toolset all the same."""
    text, digest = counted_answer()
    cache = ContractCache()
    first = asyncio.create_task(
        cache.toolset(text, name="records", digest=digest, pacer=Pacer(0.0))
    )
    while text.parsed == 0:  # the first reader is building
        await asyncio.sleep(0)
    others = [
        asyncio.create_task(cache.toolset(text, name="records", digest=digest, pacer=Pacer(0.0)))
        for _ in range(3)
    ]
    await asyncio.sleep(0)  # they wait for the first
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    built = await asyncio.gather(*others)
    assert all(toolset is built[0] for toolset in built) and len(built[0].tools) == 3
    assert text.parsed == 2  # the first, cancelled; then one of the others, for all three
