"""SPEC G4–G6: planning catalogs and registry consumption."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentgen.runtime.agents.definition import RunPolicy, TagClause
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.wire import tool_schema
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.runs.catalog import (
    DuplicateToolError,
    OutsideConsumptionError,
    RegistryNotRegisteredError,
    RegistryReadError,
    SourceNotFoundError,
    SourceRemovedError,
    UnconfiguredAgentExecutorError,
    VersionMismatchError,
)
from agentgen.runtime.search.document import search_document
from agentgen.runtime.testing import Answer, Call, ScriptedModel, Search
from examples.company.gen.assistant.agents import generalist, reader
from tests.runtime.agents import (
    ScriptedPlanner,
    Sources,
    answer,
    calls,
    echo_handler,
    provider_toolset,
    records_definition,
    register,
    registry_runtime,
)
from tests.runtime.fake_registry import FakeRegistry


async def test_generated_reader_resolves_its_source_deferred_and_runs_it() -> None:
    rt, registry = registry_runtime()
    registry.publish(provider_toolset(), echo_handler)
    model = ScriptedModel(
        [Search("search records"), Call("records.search", {"query": "x"}), Answer("ok")]
    )
    rt.register_model("m", model)
    reader.register_reader_agent(rt, reader.ReaderAgentConfig(planner=ModelPlanner("m")))
    outcome = await reader.new_client(rt).run("find")
    assert outcome.final_text == "ok"
    assert all(t.deferred for t in model.requests[0].tools)
    assert {t.id for t in model.requests[0].tools} == {
        "records.lookup",
        "records.search",
        "records.analyze",
    }
    assert registry.calls[0][0] == "records.search"


async def test_each_planning_activity_reads_once_and_the_next_reads_again() -> None:
    rt, registry = registry_runtime()
    registry.publish(provider_toolset(), echo_handler)
    planner = ScriptedPlanner([calls(("records.lookup", {"id": "1"})), answer()])
    generalist.register_generalist_agent(rt, generalist.GeneralistAgentConfig(planner=planner))
    registry.publish(provider_toolset("billing"), echo_handler)
    outcome = await generalist.new_client(rt).run("go")
    assert outcome.tool_calls == 1
    assert registry.lists == 2
    assert registry.resolves == ["billing", "records", "billing", "records"]
    assert {t.id for t in planner.seen[0]} >= {"billing.lookup", "records.lookup"}


async def test_new_providers_appear_in_later_activities_without_restart() -> None:
    rt, registry = registry_runtime()
    registry.publish(provider_toolset(), echo_handler)
    planner = ScriptedPlanner([calls(("records.lookup", {"id": "1"})), answer()])
    generalist.register_generalist_agent(rt, generalist.GeneralistAgentConfig(planner=planner))

    async def lookup(tool: str, payload: Any, meta: Any) -> Any:
        registry.publish(provider_toolset("billing"), echo_handler)  # arrives mid-run
        return await echo_handler(tool, payload, meta)

    registry.admissions["records"].handler = lookup
    await generalist.new_client(rt).run("go")
    first, second = ({t.id for t in seen} for seen in planner.seen)
    assert "billing.search" not in first
    assert "billing.search" in second


async def test_final_answer_only_activities_never_read_the_registry() -> None:
    rt, registry = registry_runtime()
    registry.publish(provider_toolset(), echo_handler)
    planner = ScriptedPlanner([calls(("records.lookup", {"id": "1"})), answer("final")])
    definition = generalist.definition()
    rt.register_agent(
        definition.__class__(**{**definition.__dict__, "policy": RunPolicy(max_tool_calls=1)}),
        planner=planner,
        executors={},
    )
    outcome = await rt.client("assistant.generalist").run("go")
    assert outcome.final_text == "final"
    assert registry.lists == 1  # only the first activity read it
    assert planner.seen[1] == []  # nothing advertised in the final-answer-only activity
    assert planner.inputs[1].finalize is True  # type: ignore[attr-defined]


async def test_a_run_without_budget_may_be_restricted_to_a_registry_tool() -> None:
    """A run whose budget is 0 starts final-answer-only and reads no registry: its restriction
    to a registry tool the agent consumes is not refused as a tool the agent lacks."""
    rt, registry = registry_runtime()
    registry.publish(provider_toolset(), echo_handler)
    planner = ScriptedPlanner([answer("only an answer")])
    generalist.register_generalist_agent(rt, generalist.GeneralistAgentConfig(planner=planner))
    policy = RunPolicy(restrict_to_tool="records.lookup", max_tool_calls=0)
    outcome = await generalist.new_client(rt).run("go", policy=policy)
    assert outcome.final_text == "only an answer"
    assert planner.inputs[0].finalize is True
    assert registry.lists == 0


async def test_a_registry_toolsets_own_tags_are_filtered_on_as_its_tools_tags() -> None:
    """A toolset's tags apply to each of its tools: a provider that tags its toolset (and not
    each tool, as the generator does) had its tools advertised and run under a policy denying
    the tag."""
    rt, registry = registry_runtime()
    registry.publish(provider_toolset(tags=["admin"]), echo_handler)
    planner = ScriptedPlanner([calls(("records.lookup", {"id": "1"})), answer()])
    generalist.register_generalist_agent(rt, generalist.GeneralistAgentConfig(planner=planner))
    denied = RunPolicy(tag_clauses=(TagClause(denied_any=("admin",)),))
    outcome = await generalist.new_client(rt).run("go", policy=denied)
    assert planner.seen[0] == []
    assert '"not_permitted"' in outcome.transcript[2].parts[0].content  # type: ignore[union-attr]
    assert registry.calls == []
    # Allowed by the toolset's tag, its tools are offered and run.
    planner.turns = [calls(("records.lookup", {"id": "2"}), prefix="d"), answer()]
    planner.seen.clear()
    allowed = RunPolicy(tag_clauses=(TagClause(allowed_any=("admin",)),))
    outcome = await generalist.new_client(rt).run("go", policy=allowed)
    assert {t.id for t in planner.seen[0]} == {
        "records.lookup",
        "records.search",
        "records.analyze",
    }
    assert [c[0] for c in registry.calls] == ["records.lookup"]


async def test_empty_whole_registry_is_valid() -> None:
    rt, _ = registry_runtime()
    planner = ScriptedPlanner([answer("nothing to use")])
    generalist.register_generalist_agent(rt, generalist.GeneralistAgentConfig(planner=planner))
    outcome = await generalist.new_client(rt).run("go")
    assert outcome.final_text == "nothing to use" and planner.seen == [[]]


async def test_run_labels_is_a_copy() -> None:
    rt, registry = registry_runtime()
    registry.publish(provider_toolset(), echo_handler)
    seen: list[dict[str, str]] = []

    class Tampering(Sources):
        async def resolve(self, catalog: Any) -> None:
            labels = catalog.run_labels()
            labels["tenant"] = "other"
            seen.append(catalog.run_labels())
            await super().resolve(catalog)

    planner = ScriptedPlanner([answer()])
    sources = Tampering(toolsets=[("company", "records", "", False)])
    definition = records_definition(specs=(), deferred_tool_ids=()).with_registry_tools(sources)
    rt.register_agent(definition, planner=planner, executors={})
    outcome = await rt.client("test.agent").run("go", labels={"tenant": "acme"})
    assert seen == [{"tenant": "acme"}]
    assert planner.inputs[0].run.labels == {"tenant": "acme"}
    assert outcome.final_text == "done"


async def test_concurrent_runs_never_see_each_others_dynamic_tools() -> None:
    rt, registry = registry_runtime()
    registry.publish(provider_toolset("alpha"), echo_handler)
    registry.publish(provider_toolset("beta"), echo_handler)

    class ByLabel(Sources):
        async def resolve(self, catalog: Any) -> None:
            await asyncio.sleep(0)
            await catalog.include_toolset("company", catalog.run_labels()["source"], "", False)

        def allows(self, registry: str, toolset: str, version: str) -> bool:
            return registry == "company"

    planners = {name: ScriptedPlanner([answer()]) for name in ("alpha", "beta")}
    for name, planner in planners.items():
        definition = records_definition(id=f"test.{name}", specs=(), deferred_tool_ids=())
        rt.register_agent(definition.with_registry_tools(ByLabel()), planner=planner, executors={})
    await asyncio.gather(
        *(rt.client(f"test.{n}").run("go", labels={"source": n}) for n in ("alpha", "beta"))
    )
    assert {t.id.split(".")[0] for t in planners["alpha"].seen[0]} == {"alpha"}
    assert {t.id.split(".")[0] for t in planners["beta"].seen[0]} == {"beta"}


# --------------------------------------------------------------------------- G6 failures


async def run_with(sources: Sources, registry: FakeRegistry | None = None, **run: Any) -> Any:
    rt, registry = registry_runtime(registry)
    definition = records_definition(id="test.dyn", specs=(), deferred_tool_ids=())
    rt.register_agent(
        definition.with_registry_tools(sources), planner=ScriptedPlanner([answer()]), executors={}
    )
    return await rt.client("test.dyn").run("go", **run)


async def test_registry_not_registered() -> None:
    with pytest.raises(RegistryNotRegisteredError, match="registry 'elsewhere' is not registered"):
        await run_with(Sources(toolsets=[("elsewhere", "records", "", False)]))


async def test_named_source_missing() -> None:
    with pytest.raises(SourceNotFoundError, match="registry 'company' has no toolset 'records'"):
        await run_with(Sources(toolsets=[("company", "records", "", False)]))


async def test_version_mismatch_checks_the_current_version_only() -> None:
    registry = FakeRegistry()
    registry.publish(provider_toolset(version="2.0.0"), echo_handler)
    with pytest.raises(
        VersionMismatchError, match="toolset 'records' requires version '1.2.3', got '2.0.0'"
    ):
        await run_with(Sources(toolsets=[("company", "records", "1.2.3", False)]), registry)
    registry = FakeRegistry()
    registry.publish(provider_toolset(version="1.2.3"), echo_handler)
    outcome = await run_with(Sources(toolsets=[("company", "records", "1.2.3", False)]), registry)
    assert outcome.final_text == "done"


async def test_source_outside_declared_consumption() -> None:
    registry = FakeRegistry()
    registry.publish(provider_toolset(), echo_handler)

    class Narrow(Sources):
        def allows(self, registry: str, toolset: str, version: str) -> bool:
            return False

    with pytest.raises(OutsideConsumptionError, match="outside agent 'test.dyn'"):
        await run_with(Narrow(toolsets=[("company", "records", "", False)]), registry)


async def test_duplicate_identity_against_static_and_earlier_dynamic_tools() -> None:
    registry = FakeRegistry()
    registry.publish(provider_toolset(), echo_handler)
    # A qualified registration name serves the same tool IDs: the second one is a duplicate.
    registry.publish(provider_toolset("svc.records", tools=provider_toolset().tools), echo_handler)
    with pytest.raises(DuplicateToolError, match="repeats tool 'records.lookup'"):
        await run_with(
            Sources(
                toolsets=[("company", "records", "", False), ("company", "svc.records", "", False)]
            ),
            registry,
        )
    rt, registry = registry_runtime()
    registry.publish(provider_toolset(), echo_handler)
    register(
        rt,
        ScriptedPlanner([answer()]),
        records_definition().with_registry_tools(
            Sources(toolsets=[("company", "records", "", False)])
        ),
    )
    with pytest.raises(DuplicateToolError, match="already supplied to agent 'test.agent'"):
        await rt.client("test.agent").run("go")


async def test_read_errors_fail_the_activity_without_fallback() -> None:
    registry = FakeRegistry()
    registry.publish(provider_toolset(), echo_handler)
    registry.fail_resolve["records"] = RegistryError("service_unavailable", "down")
    with pytest.raises(RegistryReadError, match="resolve registry 'company' toolset 'records'"):
        await run_with(Sources(toolsets=[("company", "records", "", False)]), registry)
    registry = FakeRegistry()
    registry.fail_list = ConnectionError("refused")
    with pytest.raises(
        RegistryReadError, match="list registry 'company': ConnectionError: refused"
    ):
        await run_with(Sources(registries=[("company", False)]), registry)


async def test_toolset_removed_between_list_and_resolve() -> None:
    registry = FakeRegistry()
    registry.publish(provider_toolset(), echo_handler)
    registry.remove_after_list.add("records")
    with pytest.raises(SourceRemovedError, match="removed between listing and resolving"):
        await run_with(Sources(registries=[("company", False)]), registry)


async def test_returned_toolset_name_must_match() -> None:
    registry = FakeRegistry()
    registry.publish(provider_toolset(), echo_handler)
    registry.admissions["alias"] = registry.admissions["records"]
    with pytest.raises(RegistryReadError, match="returned toolset 'records' for 'alias'"):
        await run_with(Sources(toolsets=[("company", "alias", "", False)]), registry)


async def test_schema_only_registrations_fail_resolution() -> None:
    registry = FakeRegistry()
    declaration = provider_toolset()
    for tool in declaration.tools:
        tool.consumer_contract = None
    registry.publish(declaration, echo_handler)
    with pytest.raises(RegistryReadError, match="has no generated consumer contract"):
        await run_with(Sources(toolsets=[("company", "records", "", False)]), registry)


async def test_agent_tool_with_unconfigured_executor() -> None:
    registry = FakeRegistry()
    agent_tool = tool_schema(
        tool_id="experts.ask",
        title="Ask",
        description="Ask an expert.",
        tags=(),
        payload_schema={"type": "object"},
        payload_name=None,
        result_schema={"type": "object"},
        result_name=None,
        search=search_document("experts.ask", "Ask", ""),
        kind="agent",
        agent_id="other.expert",
    )
    registry.publish(ToolsetDeclaration(name="experts", tools=[agent_tool]), echo_handler)
    with pytest.raises(UnconfiguredAgentExecutorError, match="targets unconfigured agent executor"):
        await run_with(Sources(toolsets=[("company", "experts", "", False)]), registry)


async def test_deferred_flag_of_a_registry_source_reaches_every_definition() -> None:
    rt, registry = registry_runtime()
    registry.publish(provider_toolset(), echo_handler)
    registry.publish(provider_toolset("billing"), echo_handler)
    planner = ScriptedPlanner([answer()])
    sources = Sources(
        toolsets=[("company", "records", "", True), ("company", "billing", "", False)]
    )
    rt.register_agent(
        records_definition(id="test.mixed", specs=(), deferred_tool_ids=()).with_registry_tools(
            sources
        ),
        planner=planner,
        executors={},
    )
    await rt.client("test.mixed").run("go")
    flags = {t.id: t.deferred for t in planner.seen[0]}
    assert flags["records.search"] is True and flags["billing.search"] is False
    assert set(flags) == {
        f"{p}.{t}" for p in ("records", "billing") for t in ("lookup", "search", "analyze")
    }
