"""SPEC G1 (registrations) and G5's ``with_registry_tools``."""

from __future__ import annotations

from typing import Any

import pytest

from agentgen.runtime.agents.definition import DefinitionError, RunPolicy
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.app import RegistrationClosedError, RegistrationError, Runtime
from agentgen.runtime.testing import ScriptedModel
from examples.company.gen.assistant.agents import reader
from examples.records.gen.assistant.toolsets.records import specs as records_specs
from tests.runtime.agents import (
    Records,
    ScriptedPlanner,
    Sources,
    answer,
    records_definition,
    register,
)
from tests.runtime.fake_registry import FakeRegistry


def test_register_registry_needs_name_client_and_result_stream() -> None:
    rt = Runtime()
    registry = FakeRegistry()
    message = "registry name, client, and result-stream client are required"
    for args in (
        ("", registry, registry),
        ("company", None, registry),
        ("company", registry, None),
    ):
        with pytest.raises(RegistrationError, match=message):
            rt.register_registry(*args)
    rt.register_registry("company", registry, registry)
    with pytest.raises(RegistrationError, match="registry 'company' is already registered"):
        rt.register_registry("company", registry, registry)


def test_a_client_waiting_for_outcomes_past_half_the_timeout_is_refused() -> None:
    """The registry's Timeout bounds the admission request in which the client waits for the
    call's outcome: a wait as long would cut a slow tool's admission while the registry still
    waited, and the model read outcome_unknown for a call that was admitted and ran."""
    from dataclasses import dataclass

    from agentgen.runtime.registry.http_client import HttpRegistryClient

    @dataclass
    class Settings:
        name: str = "company"
        timeout: float | None = 1.0

    slow = HttpRegistryClient("http://127.0.0.1:9", timeout=1.0, call_wait_ms=5_000)
    with pytest.raises(RegistrationError) as refusal:
        Runtime().register_registry("company", slow, slow, settings=Settings())
    message = str(refusal.value)
    assert "registry 'company'" in message and "call_wait_ms=5000" in message
    assert "Timeout of 1 s" in message and "at most 500" in message
    # Half the Timeout, and the default (a quarter of the client's timeout), are accepted.
    for client in (
        HttpRegistryClient("http://127.0.0.1:9", timeout=1.0, call_wait_ms=500),
        HttpRegistryClient("http://127.0.0.1:9", timeout=1.0),
    ):
        Runtime().register_registry("company", client, client, settings=Settings())
    # Without settings the runtime's default Timeout (30 s) bounds it.
    Runtime().register_registry("company", slow, slow)


async def test_registrations_close_with_the_first_run() -> None:
    rt = Runtime()
    register(rt, ScriptedPlanner([answer()]))
    await rt.client("test.agent").run("hi")
    registry = FakeRegistry()
    with pytest.raises(RegistrationClosedError, match="registration is closed"):
        rt.register_registry("company", registry, registry)
    with pytest.raises(RegistrationClosedError):
        rt.register_model("m", ScriptedModel([]))
    with pytest.raises(RegistrationClosedError):
        register(rt, ScriptedPlanner([]), records_definition(id="test.other"))


def test_explicit_seal_closes_registration() -> None:
    rt = Runtime()
    rt.seal()
    with pytest.raises(RegistrationClosedError):
        register(rt, ScriptedPlanner([]))


def test_duplicate_agents_and_models_and_missing_executors() -> None:
    rt = Runtime()
    register(rt, ScriptedPlanner([]))
    with pytest.raises(RegistrationError, match="agent 'test.agent' is already registered"):
        register(rt, ScriptedPlanner([]))
    rt.register_model("m", ScriptedModel([]))
    with pytest.raises(RegistrationError, match="model 'm' is already registered"):
        rt.register_model("m", ScriptedModel([]))
    with pytest.raises(RegistrationError, match="no executor for toolset.*assistant.records"):
        rt.register_agent(
            records_definition(id="test.bare"), planner=ScriptedPlanner([]), executors={}
        )


def test_a_model_client_planner_or_executor_of_the_wrong_kind_is_refused_naming_it() -> None:
    rt = Runtime()
    with pytest.raises(
        RegistrationError, match=r"model 'm': 'gpt-5' \(str\) is not a model client"
    ):
        rt.register_model("m", "gpt-5")  # type: ignore[arg-type]
    with pytest.raises(
        RegistrationError,
        match=r"agent 'test.agent': planner 'm' \(str\) is not a Planner .*no plan_start or "
        "plan_resume method.*ModelPlanner",
    ):
        rt.register_agent(records_definition(), planner="m", executors={})  # type: ignore[arg-type]
    with pytest.raises(
        RegistrationError,
        match="agent 'test.agent': the executor of toolset.s. assistant.records has no execute",
    ):
        rt.register_agent(
            records_definition(),
            planner=ScriptedPlanner([]),
            executors={"assistant.records": Records()},  # type: ignore[dict-item]
        )
    register(rt, ScriptedPlanner([answer()]))  # nothing was half-registered
    rt.seal()


class LookupOnly:
    async def lookup(self, args: object, context: object) -> object:
        return None


@pytest.mark.parametrize(
    ("executor", "message"),
    [
        (None, "ClerkAgentConfig.records_executor is None; pass an object implementing "),
        (Records, "ClerkAgentConfig.records_executor is the class Records, not an instance; "),
        (LookupOnly(), r"\(LookupOnly\) does not implement RecordsExecutor: it has no method "),
        ("records", r"'records' \(str\) does not implement RecordsExecutor: it has no method "),
    ],
)
def test_generated_registration_refuses_an_executor_that_cannot_run_the_agents_tools(
    executor: object, message: str
) -> None:
    from examples.records.gen.assistant.agents import clerk

    rt = Runtime()
    config = clerk.ClerkAgentConfig(planner=ScriptedPlanner([]), records_executor=executor)  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match=f"agent 'assistant.clerk': .*{message}") as info:
        clerk.register_clerk_agent(rt, config)
    assert "RecordsExecutor" in str(info.value)
    if isinstance(executor, LookupOnly):
        assert str(info.value).endswith(
            "no method search, analyze; pass an object implementing RecordsExecutor"
        )
    clerk.register_clerk_agent(
        rt, clerk.ClerkAgentConfig(planner=ScriptedPlanner([]), records_executor=Records())
    )


async def test_a_model_planner_whose_model_is_not_registered_fails_the_seal_naming_agents() -> None:
    rt = Runtime()
    register(rt, ModelPlanner("llm"))  # type: ignore[arg-type]
    register(rt, ModelPlanner("llm"), records_definition(id="test.other"))  # type: ignore[arg-type]
    with pytest.raises(
        RegistrationError,
        match=r"model 'llm' is not registered, but the ModelPlanner of agent\(s\) test.agent, "
        r"test.other hands its planning to it; register it with rt.register_model\('llm', ",
    ):
        await rt.client("test.agent").run("hi")
    assert not rt.sealed  # registration stays open: the application can add the model
    rt.register_model("llm", ScriptedModel(["done"]))
    assert (await rt.client("test.agent").run("hi")).final_text == "done"


def test_generated_definition_and_client_take_no_catalog_and_do_no_io() -> None:
    rt = Runtime()  # no registry registered: building them must not need one
    definition = reader.definition()
    client = reader.new_client(rt)
    assert definition.id == "assistant.reader" and client.agent_id == "assistant.reader"
    assert definition.specs == () and definition.registry_tools is not None


def test_with_registry_tools_exactly_once_returns_a_new_definition() -> None:
    original = records_definition()
    sources = Sources()
    custom = original.with_registry_tools(sources)
    assert custom is not original and custom.registry_tools is sources
    assert original.registry_tools is None
    with pytest.raises(DefinitionError, match="exactly once"):
        custom.with_registry_tools(Sources())
    with pytest.raises(DefinitionError, match="must not be None"):
        original.with_registry_tools(None)  # type: ignore[arg-type]
    generated = reader.definition().with_registry_tools(sources)
    assert generated.registry_tools is sources


def test_static_registrations_are_immutable() -> None:
    definition = records_definition()
    with pytest.raises(AttributeError):
        definition.specs = ()  # type: ignore[misc]
    assert records_specs.SPECS[0].id == "records.lookup"


def test_seal_lists_every_registry_the_agents_consume_that_is_not_registered() -> None:
    from dataclasses import replace

    from examples.company.gen.assistant.agents import generalist

    assert reader.definition().registries == ("company",)
    rt = Runtime()
    for agent in (reader, generalist):
        rt.register_agent(agent.definition(), planner=ScriptedPlanner([]), executors={})
    archive = replace(records_definition(id="test.archivist"), registries=("archive", "company"))
    register(rt, ScriptedPlanner([]), archive)
    with pytest.raises(RegistrationError) as raised:
        rt.seal()
    assert str(raised.value) == (
        "runtime: registries consumed by registered agents are not registered: 'archive' "
        "(used by test.archivist), 'company' (used by assistant.generalist, assistant.reader, "
        "test.archivist); register each with rt.register_registry(name, client, result_stream) "
        "before the first run"
    )
    assert not rt.sealed  # the application can still register them
    registry = FakeRegistry()
    rt.register_registry("company", registry, registry)
    rt.register_registry("archive", registry, registry)
    rt.seal()
    assert rt.sealed


async def test_the_first_run_checks_consumed_registries_before_planning() -> None:
    rt = Runtime()
    planner = ScriptedPlanner([answer()])
    rt.register_agent(reader.definition(), planner=planner, executors={})
    with pytest.raises(RegistrationError, match="'company' \\(used by assistant.reader\\)"):
        await reader.new_client(rt).run("hi")
    assert planner.inputs == []


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: Runtime(policy="strict"),  # type: ignore[arg-type]
            r"Runtime\(...\): policy must be a RunPolicy, not 'strict'",
        ),
        (lambda: Runtime(confirm=True), r"confirm must be an async callable, not True \(bool\)"),  # type: ignore[arg-type]
        (lambda: Runtime(engine=object()), r"engine must be an Engine, not <object object"),  # type: ignore[arg-type]
        (lambda: Runtime(telemetry={}), r"telemetry must be a Telemetry, not \{\} \(dict\)"),  # type: ignore[arg-type]
        (lambda: ModelPlanner(3), r"ModelPlanner\(3\): model_id must be a non-empty string"),  # type: ignore[arg-type]
        (
            lambda: ModelPlanner("m", max_tokens="4096"),  # type: ignore[arg-type]
            r"ModelPlanner\('m'\): max_tokens must be an int, not '4096' \(str\)",
        ),
        (lambda: ModelPlanner("m", system=["be brief"]), r"system must be a string, not \['be"),  # type: ignore[arg-type]
        (
            lambda: ModelPlanner("m", accept_stop_reasons="max_tokens"),
            r"accept_stop_reasons must be a collection of strings, not 'max_tokens'",
        ),
        (lambda: RunPolicy(max_tool_calls="3"), r"max_tool_calls must be None \(no limit\) or"),  # type: ignore[arg-type]
        (lambda: RunPolicy(tag_clauses=["web"]), r"tag_clauses must be a tuple of TagClause"),  # type: ignore[arg-type]
    ],
)
def test_public_constructors_refuse_arguments_of_the_wrong_kind_naming_them(
    build: Any, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        build()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ModelPlanner(""), r"ModelPlanner\(''\): model_id must be a non-empty string"),
        # A count no model's context holds bounds nothing (MAX_TOOL_CALLS, as the DSL's).
        (
            lambda: RunPolicy(max_tool_calls=10_001),
            r"max_tool_calls must be None \(no limit\) or an int from 0 to 10000 "
            r"\(MAX_TOOL_CALLS\), not 10001",
        ),
        (
            lambda: RunPolicy(max_consecutive_failed_tool_calls=10**5000),
            r"from 1 to 10000 \(MAX_TOOL_CALLS\), not an integer of 16610 bits \(int\)",
        ),
        (lambda: RunPolicy(max_consecutive_failed_tool_calls=-1), r"failed_tool_calls must be"),
        # 0 made every activity after the first final-answer-only (no failure needed).
        (
            lambda: RunPolicy(max_consecutive_failed_tool_calls=0),
            r"max_consecutive_failed_tool_calls must be None \(no limit\) or an int from 1 to "
            r"10000 \(MAX_TOOL_CALLS\), not 0",
        ),
        (lambda: RunPolicy(restrict_to_tool=""), r"restrict_to_tool must be None or a tool ID"),
    ],
)
def test_public_constructors_refuse_arguments_of_the_right_type_but_a_wrong_value_as_such(
    build: Any, message: str
) -> None:
    """ValueError, as ModelPlanner's max_tokens and RetryPolicy say it: a count out of range,
    an empty name. These were TypeErrors, though of the right type."""
    with pytest.raises(ValueError, match=message):
        build()


@pytest.mark.parametrize("max_tokens", [0, -5])
def test_a_model_planner_needs_a_positive_max_tokens(max_tokens: int) -> None:
    with pytest.raises(
        ValueError, match=f"ModelPlanner\\('m'\\): max_tokens must be positive, not {max_tokens}"
    ):
        ModelPlanner("m", max_tokens=max_tokens)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"messages": ["hi"]}, r"messages\[0\] is 'hi' \(str\), not a Message; pass Message.user"),
        ({"messages": 42}, r"messages must be a string or a sequence of Message, not 42 \(int\)"),
        ({"labels": ["tenant"]}, r"labels must be a mapping of label names to string values"),
        ({"labels": {"tenant": 7}}, r"label 'tenant' = 7 \(int\): label names and values"),
        ({"policy": {"max_tool_calls": 1}}, r"policy must be a RunPolicy, not \{'max_tool_calls'"),
        ({"run_id": 5}, r"run_id must be a string, not 5 \(int\)"),
    ],
)
async def test_run_arguments_of_the_wrong_kind_are_refused_before_the_run_starts(
    arguments: dict[str, Any], message: str
) -> None:
    rt = Runtime()
    planner = ScriptedPlanner([answer()])
    register(rt, planner)
    messages = arguments.pop("messages", "hi")
    with pytest.raises(TypeError, match=f"agent 'test.agent': run: {message}"):
        await rt.client("test.agent").run(messages, **arguments)
    assert planner.inputs == []


@pytest.mark.parametrize("version", [1, 2])
def test_deferred_tools_of_a_package_of_another_search_version_are_refused(
    version: int,
) -> None:
    # Such a package registered, then the run failed at the model's first tool search; after
    # a search version bump every committed package is one until it is generated again. A
    # planner of its own may hand the tools to any client, so the default ranking decides (the
    # clients' own rankings: tests/adapters/test_stale_search_documents.py).
    from dataclasses import replace

    from agentgen.runtime.search.analysis import SEARCH_VERSION
    from agentgen.runtime.search.document import VERSION_FIELDS, SearchDocument

    fresh = records_specs.SPECS
    assert {spec.search.version for spec in fresh} == {SEARCH_VERSION}
    width = len(VERSION_FIELDS[version])
    old = SearchDocument({"records": (1,) * width}, version)
    # records.lookup is eager (never ranked); records.search is the deferred tool at fault.
    assert fresh[1].id == "records.search"
    stale = (fresh[0], replace(fresh[1], search=old), fresh[2])
    rt = Runtime()
    with pytest.raises(RegistrationError) as caught:
        register(rt, ScriptedPlanner([]), records_definition(specs=stale))
    assert str(caught.value) == (
        "runtime: agent 'test.agent': the search documents of its deferred tools "
        f"records.search (toolset '{records_specs.TOOLSET}') counted with search version "
        f"{version} were written by another agentgen, and this one ranks search version "
        f"{SEARCH_VERSION}: its planner (ScriptedPlanner, not a ModelPlanner) may hand them to "
        "any model client, and the default search ranking ('fields') ranks deferred tools by "
        "these counts and cannot read another version's. Regenerate the agent's package with "
        "this agentgen (agentgen gen DESIGN) and commit it"
    )
    register(rt, ScriptedPlanner([]), records_definition(specs=fresh))  # the fresh one registers


@pytest.mark.parametrize("version", [1, 2])
async def test_eager_tools_of_another_search_version_register_and_run(version: int) -> None:
    # Eager tools reach the model whole and are never ranked, yet an agent whose stale tools
    # were all eager was refused, waiting on a regeneration that changes nothing it does.
    from dataclasses import replace

    from agentgen.runtime.search.document import VERSION_FIELDS, SearchDocument
    from agentgen.runtime.testing import Answer, Call, Search

    old = SearchDocument({"records": (1,) * len(VERSION_FIELDS[version])}, version)
    fresh = records_specs.SPECS
    # Every tool stale, none deferred: the agent runs a call.
    rt = Runtime()
    model = ScriptedModel([Call("records.lookup", {"id": "1"}), Answer("ok")])
    rt.register_model("m", model)
    executor = register(
        rt,
        ModelPlanner("m"),  # type: ignore[arg-type]
        records_definition(
            specs=tuple(replace(spec, search=old) for spec in fresh), deferred_tool_ids=()
        ),
    )
    outcome = await rt.client("test.agent").run("look up 1")
    assert outcome.final_text == "ok"
    assert [call[0] for call in executor.calls] == ["lookup"]
    # A stale eager tool beside fresh deferred ones: those are searched for and called.
    assert fresh[0].id == "records.lookup"
    rt = Runtime()
    model = ScriptedModel(
        [Search("search records"), Call("records.search", {"query": "x"}), Answer("found")]
    )
    rt.register_model("m", model)
    executor = register(
        rt,
        ModelPlanner("m"),  # type: ignore[arg-type]
        records_definition(specs=(replace(fresh[0], search=old), *fresh[1:])),
    )
    outcome = await rt.client("test.agent").run("search for x")
    assert outcome.final_text == "found"
    assert [call[0] for call in executor.calls] == ["search"]


@pytest.mark.usefixtures("snowball_2_stemmer")
def test_an_agent_that_searches_is_refused_when_the_stemmer_gives_other_stems() -> None:
    # Such an agent registered, then its run failed at the model's first tool search.
    from agentgen.runtime.search import analysis

    rt = Runtime()
    refused = {
        "test.agent": records_definition(),  # deferred tools
        "assistant.reader": reader.definition(),  # a registry's toolsets
    }
    for agent, definition in refused.items():
        with pytest.raises(analysis.StemmerVersionError) as caught:
            register(rt, ScriptedPlanner([]), definition)
        message = str(caught.value)
        assert message.startswith(
            f"runtime: agent {agent!r} searches its tools (deferred or from a registry), and "
            "the installed stemmer (PyStemmer "
        ), message
        assert "'added' as 'ad' (expected 'add')" in message
        assert message.endswith("pip install 'PyStemmer>=3.1,<4'")
    # An agent that searches nothing does not need the stemmer.
    register(rt, ScriptedPlanner([]), records_definition(deferred_tool_ids=()))


def test_an_agent_tool_that_names_no_agent_is_refused_naming_it() -> None:
    from dataclasses import replace

    from agentgen.runtime.agents.definition import AgentDefinition
    from tests.runtime.sink_agents import ASK

    # Its calls failed with a bare AssertionError, read by the model as an internal error.
    definition = AgentDefinition(
        id="helpdesk.triage", description="Triages.", specs=(replace(ASK, agent_id=None),)
    )
    with pytest.raises(RegistrationError) as raised:
        Runtime().register_agent(definition, planner=ScriptedPlanner([]), executors={})
    assert str(raised.value) == (
        "runtime: agent 'helpdesk.triage': agent tool(s) ask_expert.ask name no agent to run "
        "(agent_id); set each one's agent_id to the ID of the agent that answers its calls"
    )


def test_seal_names_the_agent_of_an_agent_tool_missing_from_agent_executors() -> None:
    from agentgen.runtime.agents.definition import AgentDefinition
    from tests.runtime.sink_agents import ASK, expert_definition

    # Hand-written, without agent_executors: its calls still start child runs of the expert,
    # which failed only when the model called the tool.
    definition = AgentDefinition(id="helpdesk.triage", description="Triages.", specs=(ASK,))
    rt = Runtime()
    rt.register_agent(definition, planner=ScriptedPlanner([]), executors={})
    with pytest.raises(RegistrationError) as raised:
        rt.seal()
    assert str(raised.value) == (
        "runtime: agent 'helpdesk.triage' calls agents exposed as tools that are not "
        "registered: helpdesk.expert; register them before the first run"
    )
    rt.register_agent(expert_definition(), planner=ScriptedPlanner([]), executors={})
    rt.seal()
    assert rt.sealed
