"""The runtime's ModelPlanner with real SDK adapters: the deferred records tools are found by
search, executed by the runtime, and the stored transcript continues in a later run."""

from __future__ import annotations

import json

import pytest

from agentgen.runtime import transcript
from agentgen.runtime.adapters import AnthropicMessagesModel, ModelError, OpenAIResponsesModel
from agentgen.runtime.adapters.anthropic_search import METADATA_KEY as ANTHROPIC_KEY
from agentgen.runtime.adapters.openai_search import METADATA_KEY as OPENAI_KEY
from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.app import Runtime
from agentgen.runtime.messages import Message, TextPart
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


async def test_openai_search_execution_and_replay_through_the_runtime() -> None:
    server = openai_server(
        response(search_call("s1", "search records")),
        response(function_call("c1", "records_search", '{"query": "Ada"}', "records_search")),
        response(text("Found r1.")),
        response(text("Still r1.")),
    )
    rt = Runtime()
    rt.register_model("gpt", OpenAIResponsesModel(openai_client(server)))
    executor = register(rt, ModelPlanner("gpt", model="gpt-5.4", max_tokens=500))  # type: ignore[arg-type]
    outcome = await rt.client("test.agent").run("Find Ada")
    assert outcome.final_text == "Found r1."
    assert [(name, args.query) for name, args, _ in executor.calls] == [("search", "Ada")]
    first_tools = [t.get("name") or t["type"] for t in server.bodies[0]["tools"]]
    assert first_tools == ["records_lookup", "tool_search"]
    assert OPENAI_KEY in outcome.transcript[1].metadata

    # The application stores the transcript and continues the conversation later.
    history = transcript.loads(transcript.dumps(outcome.transcript))
    again = await rt.client("test.agent").run([*history, Message.user("And now?")])
    assert again.final_text == "Still r1."
    kinds = [item["type"] for item in server.bodies[-1]["input"]]
    assert kinds[:5] == [
        "message",
        "tool_search_call",
        "tool_search_output",
        "function_call",
        "function_call_output",
    ]


async def test_anthropic_search_execution_through_the_runtime() -> None:
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
    executor = register(rt, ModelPlanner("claude", model="claude-opus-4-7"))  # type: ignore[arg-type]
    outcome = await rt.client("test.agent").run("Find Ada")
    assert outcome.final_text == "Found r1."
    assert [name for name, _, _ in executor.calls] == ["search"]
    sent = {t["name"]: t.get("defer_loading", False) for t in server.bodies[0]["tools"]}
    assert sent == {
        "records_lookup": False,
        "records_search": True,
        "records_analyze": True,
        "tool_search_tool_regex": False,
    }
    meta = outcome.transcript[1].metadata[ANTHROPIC_KEY]
    assert [d["tool_id"] for d in meta["definitions"]] == ["records.search"]
    tool_result = server.bodies[1]["messages"][2]["content"][0]
    assert tool_result["tool_use_id"] == "toolu_1"
    assert json.loads(tool_result["content"]) == {"ids": ["r1"]}


async def test_openai_final_answer_only_activity_of_an_all_deferred_agent() -> None:
    # After the one call the policy allows, the run asks for a final answer (tool choice
    # 'none'). Every tool is deferred, so that request has no top-level tool, but the replayed
    # search output still declares records_search: 'none' must reach it.
    server = openai_server(
        response(search_call("s1", "search records")),
        response(function_call("c1", "records_search", '{"query": "Ada"}', "records_search")),
        response(text("Found r1.")),
    )
    rt = Runtime()
    rt.register_model("gpt", OpenAIResponsesModel(openai_client(server)))
    definition = records_definition(
        deferred_tool_ids=("records.analyze", "records.lookup", "records.search"),
        policy=RunPolicy(max_tool_calls=1),
    )
    planner = ModelPlanner("gpt", model="gpt-5.4", max_tokens=500)
    register(rt, planner, definition)  # type: ignore[arg-type]
    outcome = await rt.client("test.agent").run("Find Ada")
    assert outcome.final_text == "Found r1."
    final = server.bodies[-1]
    assert "tools" not in final and final["tool_choice"] == "none"


async def test_openai_commentary_of_a_search_round_is_not_the_final_text() -> None:
    server = openai_server(
        response(text("Let me find a tool.", "m1", "commentary"), search_call("s1", "records")),
        response(text("I could not find Ada.", "m2", "final_answer")),
    )
    rt = Runtime()
    rt.register_model("gpt", OpenAIResponsesModel(openai_client(server)))
    register(rt, ModelPlanner("gpt", model="gpt-5.4", max_tokens=500))  # type: ignore[arg-type]
    outcome = await rt.client("test.agent").run("Find Ada")
    assert outcome.final_text == "I could not find Ada."
    # The transcript keeps both, with their phases, for replay.
    answer = outcome.transcript[-1]
    assert [(p.text, p.phase) for p in answer.parts if isinstance(p, TextPart)] == [
        ("Let me find a tool.", "commentary"),
        ("I could not find Ada.", "final_answer"),
    ]


async def test_a_call_in_a_reply_the_provider_refused_is_never_run() -> None:
    # Before: the run executed the call, then went on as if nothing happened.
    server = anthropic_server(
        message(tool_use("toolu_1", "records_lookup", {"id": "r1"}), stop_reason="refusal"),
        message(claude_text("Done.")),
    )
    rt = Runtime()
    rt.register_model("claude", AnthropicMessagesModel(anthropic_client(server)))
    executor = register(rt, ModelPlanner("claude", model="claude-opus-4-7"))  # type: ignore[arg-type]
    with pytest.raises(ModelError, match=r"was refused by the provider \(stop_reason 'refusal'"):
        await rt.client("test.agent").run("Find Ada")
    assert executor.calls == [] and len(server.bodies) == 1
