"""SPEC G1 (registrations) and G5's ``with_registry_tools``."""

from __future__ import annotations

import pytest

from agentgen.runtime.agents.definition import DefinitionError
from agentgen.runtime.app import RegistrationClosedError, RegistrationError, Runtime
from examples.company.gen.assistant.agents import reader
from examples.records.gen.assistant.toolsets.records import specs as records_specs
from tests.runtime.agents import ScriptedPlanner, Sources, answer, records_definition, register
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


async def test_registrations_close_with_the_first_run() -> None:
    rt = Runtime()
    register(rt, ScriptedPlanner([answer()]))
    await rt.client("test.agent").run("hi")
    registry = FakeRegistry()
    with pytest.raises(RegistrationClosedError, match="registration is closed"):
        rt.register_registry("company", registry, registry)
    with pytest.raises(RegistrationClosedError):
        rt.register_model("m", object())  # type: ignore[arg-type]
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
    rt.register_model("m", object())  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="model 'm' is already registered"):
        rt.register_model("m", object())  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="no executor for toolset.*assistant.records"):
        rt.register_agent(
            records_definition(id="test.bare"), planner=ScriptedPlanner([]), executors={}
        )


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
