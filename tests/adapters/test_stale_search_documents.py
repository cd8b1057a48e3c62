"""A package generated with another search version, as each model client's ranking sees it.

The ranking belongs to the model client, not to the agent: an OpenAI client ranking with
``classic`` counts each tool's text itself, and Claude searches on Anthropic's side, so both run
such a package; the default ``fields`` ranking reads the generated counts and refuses it before
any run (at registration when its client was registered first, else when the runtime seals)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agentgen.runtime.adapters import AnthropicMessagesModel, OpenAIResponsesModel
from agentgen.runtime.agents.definition import AgentDefinition
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.app import RegistrationError, Runtime
from agentgen.runtime.search.analysis import SEARCH_VERSION
from agentgen.runtime.search.document import VERSION_FIELDS, SearchDocument
from examples.records.gen.assistant.toolsets.records import specs as records_specs
from tests.adapters.fakes import (
    anthropic_client,
    anthropic_server,
    claude_text,
    function_call,
    message,
    openai_client,
    openai_server,
    response,
    search_call,
    search_result,
    server_search,
    text,
    tool_use,
)
from tests.runtime.agents import records_definition, register

STALE_VERSION = 2


def stale_definition() -> AgentDefinition:
    """The records agent with every tool's search document counted by search version 2 (the
    counts say nothing of the tools: only the text can find them)."""
    old = SearchDocument({"zzz": (1,) * len(VERSION_FIELDS[STALE_VERSION])}, STALE_VERSION)
    return records_definition(
        specs=tuple(replace(spec, search=old) for spec in records_specs.SPECS)
    )


def refusal(client: str, declared: bool = True) -> str:
    said = "" if declared else ", the default: it declares none"
    return (
        "runtime: agent 'test.agent': the search documents of its deferred tools "
        f"records.analyze, records.search (toolset '{records_specs.TOOLSET}') counted with "
        f"search version {STALE_VERSION} were written by another agentgen, and this one ranks "
        f"search version {SEARCH_VERSION}: model client {client!r} ranks deferred tools by "
        f"these counts (search ranking 'fields'{said}) and cannot read another version's. "
        "Regenerate the agent's package with this agentgen (agentgen gen DESIGN) and commit it"
    )


@pytest.mark.parametrize("model_first", [True, False])
async def test_a_classic_openai_client_searches_a_stale_package(model_first: bool) -> None:
    # Refused at registration whatever the client's ranking, though classic never reads the
    # counts: it counts each tool's text when its index is built.
    server = openai_server(
        response(search_call("s1", "search records")),
        response(function_call("c1", "records_search", '{"query": "Ada"}', "records_search")),
        response(text("Found r1.")),
    )
    rt = Runtime()
    model = OpenAIResponsesModel(openai_client(server), search_ranking="classic")
    if model_first:
        rt.register_model("gpt", model)
    planner = ModelPlanner("gpt", model="gpt-5.4", max_tokens=500)
    executor = register(rt, planner, stale_definition())  # type: ignore[arg-type]
    if not model_first:
        rt.register_model("gpt", model)
    outcome = await rt.client("test.agent").run("Find Ada")
    assert outcome.final_text == "Found r1."
    assert [(name, args.query) for name, args, _ in executor.calls] == [("search", "Ada")]
    loaded = server.bodies[1]["input"][2]
    assert loaded["type"] == "tool_search_output"
    assert loaded["tools"][0]["name"] == "records_search"


async def test_a_claude_client_runs_a_stale_package() -> None:
    # Claude searches on Anthropic's side: the counts are never read.
    server = anthropic_server(
        message(
            server_search("srvtoolu_1", "search"),
            search_result("srvtoolu_1", "records_search"),
            tool_use("toolu_1", "records_search", {"query": "Ada"}),
            stop_reason="tool_use",
        ),
        message(claude_text("Found r1.")),
    )
    rt = Runtime()
    rt.register_model("claude", AnthropicMessagesModel(anthropic_client(server)))
    planner = ModelPlanner("claude", model="claude-opus-4-7")
    executor = register(rt, planner, stale_definition())  # type: ignore[arg-type]
    outcome = await rt.client("test.agent").run("Find Ada")
    assert outcome.final_text == "Found r1."
    assert [name for name, _, _ in executor.calls] == ["search"]


def test_a_fields_client_registered_first_refuses_a_stale_package_at_registration() -> None:
    rt = Runtime()
    rt.register_model("gpt", OpenAIResponsesModel(openai_client(openai_server())))
    with pytest.raises(RegistrationError) as caught:
        register(rt, ModelPlanner("gpt"), stale_definition())  # type: ignore[arg-type]
    assert str(caught.value) == refusal("gpt")


async def test_a_fields_client_registered_later_refuses_a_stale_package_before_any_run() -> None:
    server = openai_server(response(text("never asked")))
    rt = Runtime()
    register(rt, ModelPlanner("gpt"), stale_definition())  # type: ignore[arg-type]
    rt.register_model("gpt", OpenAIResponsesModel(openai_client(server)))
    with pytest.raises(RegistrationError) as caught:
        await rt.client("test.agent").run("Find Ada")
    assert str(caught.value) == refusal("gpt")
    assert server.bodies == []
    assert not rt.sealed  # registration stays open, as for every problem seal() finds


def test_a_client_that_declares_no_ranking_is_taken_to_rank_by_the_counts() -> None:
    # A client of the application's own (a wrapper, a test double) ranks as the default does.
    class Wrapper:
        async def complete(self, request: object) -> object:
            raise AssertionError("never called")

    rt = Runtime()
    rt.register_model("mine", Wrapper())  # type: ignore[arg-type]
    with pytest.raises(RegistrationError) as caught:
        register(rt, ModelPlanner("mine"), stale_definition())  # type: ignore[arg-type]
    assert str(caught.value) == refusal("mine", declared=False)
