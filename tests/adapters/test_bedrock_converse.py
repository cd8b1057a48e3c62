"""Bedrock Converse: eager tools work, deferred ones are refused, never loaded eagerly (SPEC I2,
I3). boto3's Stubber answers, after botocore validated the parameters and the canned reply
against the service model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3  # type: ignore[import-untyped]
import pytest
from botocore.stub import Stubber  # type: ignore[import-untyped]

from agentgen.runtime.adapters import (
    BedrockConverseModel,
    HistoryReplayError,
    ModelError,
    ToolIdentityError,
    ToolSearchUnsupportedError,
)
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import ToolChoice, Usage
from tests.adapters.tools import RECORDS, WEATHER, deferred, request

MODEL = "anthropic.claude-sonnet-4-5-v1:0"


class Converse:
    """A stubbed bedrock-runtime client that records the parameters of each call."""

    def __init__(self) -> None:
        self.client = boto3.client(
            "bedrock-runtime",
            region_name="us-west-2",
            aws_access_key_id="AKIDTEST",
            aws_secret_access_key="secret",
        )
        self.stubber = Stubber(self.client)
        self.calls: list[dict[str, Any]] = []
        self.client.meta.events.register(
            "provide-client-params.bedrock-runtime.Converse", self._record
        )

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        self.calls.append(params)

    def reply(self, *content: dict[str, Any], stop: str = "end_turn") -> None:
        self.stubber.add_response(
            "converse",
            {
                "output": {"message": {"role": "assistant", "content": list(content)}},
                "stopReason": stop,
                "usage": {"inputTokens": 50, "outputTokens": 7, "totalTokens": 57},
                "metrics": {"latencyMs": 12},
            },
        )


@pytest.fixture
def converse() -> Iterator[Converse]:
    stub = Converse()
    with stub.stubber:
        yield stub
        stub.stubber.assert_no_pending_responses()


async def test_eager_tools_and_text(converse: Converse) -> None:
    converse.reply({"text": "Hello"})
    reply = await BedrockConverseModel(converse.client).complete(
        request(tools=(RECORDS,), model=MODEL, system="Be brief.", max_tokens=300)
    )
    [params] = converse.calls
    assert params["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "records_search",
                    "description": RECORDS.description,
                    "inputSchema": {"json": RECORDS.parameters()},
                }
            }
        ]
    }
    assert params["system"] == [{"text": "Be brief."}]
    assert params["inferenceConfig"] == {"maxTokens": 300}
    assert reply.message.parts == (TextPart("Hello"),)
    assert reply.usage == Usage(50, 7)
    assert reply.stop_reason == "end_turn"


async def test_deferred_tools_are_refused_and_never_sent_eagerly(converse: Converse) -> None:
    with pytest.raises(ToolSearchUnsupportedError) as error:
        await BedrockConverseModel(converse.client).complete(
            request(tools=(RECORDS, WEATHER), model=MODEL)
        )
    assert "'weather.lookup'" in str(error.value) and "Converse" in str(error.value)
    assert converse.calls == []


async def test_a_refusal_during_a_run_names_the_agent_and_model_registration(
    converse: Converse,
) -> None:
    from agentgen.runtime import ModelPlanner, Runtime
    from examples.records.gen.assistant.agents import assistant
    from tests.runtime.agents import Records

    rt = Runtime()
    rt.register_model("converse", BedrockConverseModel(converse.client))
    assistant.register_assistant_agent(
        rt,
        assistant.AssistantAgentConfig(
            planner=ModelPlanner("converse", model=MODEL), records_executor=Records()
        ),
    )
    with pytest.raises(ToolSearchUnsupportedError) as error:
        await assistant.new_client(rt).run("Any records?", run_id="run-7")
    assert error.value.__notes__ == [
        "planning agent 'assistant.assistant' (run run-7) with the model client registered as "
        "'converse'"
    ]
    assert converse.calls == []


async def test_forcing_a_deferred_tool_sends_just_that_tool(converse: Converse) -> None:
    converse.reply(
        {"toolUse": {"toolUseId": "t1", "name": "weather_lookup", "input": {"city": "Oslo"}}}
    )
    reply = await BedrockConverseModel(converse.client).complete(
        request(tools=(RECORDS, WEATHER), choice=ToolChoice("tool", "weather.lookup"), model=MODEL)
    )
    config = converse.calls[0]["toolConfig"]
    assert [t["toolSpec"]["name"] for t in config["tools"]] == ["weather_lookup"]
    assert config["toolChoice"] == {"tool": {"name": "weather_lookup"}}
    assert reply.message.parts == (ToolCallPart("t1", "weather.lookup", '{"city": "Oslo"}'),)


async def test_tool_choice_none_sends_no_tools(converse: Converse) -> None:
    converse.reply({"text": "Just text."})
    await BedrockConverseModel(converse.client).complete(
        request(tools=(RECORDS, WEATHER), choice=ToolChoice("none"), model=MODEL)
    )
    assert "toolConfig" not in converse.calls[0]


def tool_history() -> list[Message]:
    call = ToolCallPart("t1", "records.search", '{"name": "Ada"}')
    return [
        Message.user("Find Ada"),
        Message("assistant", (TextPart("Searching."), call)),
        Message("tool", (ToolResultPart("t1", "records.search", '{"found": 1}'),)),
        Message.user("Summarise."),
    ]


async def test_history_encoding(converse: Converse) -> None:
    converse.reply({"text": "One record."})
    await BedrockConverseModel(converse.client).complete(
        request(*tool_history(), tools=(RECORDS,), model=MODEL)
    )
    assert converse.calls[0]["messages"] == [
        {"role": "user", "content": [{"text": "Find Ada"}]},
        {
            "role": "assistant",
            "content": [
                {"text": "Searching."},
                {
                    "toolUse": {
                        "toolUseId": "t1",
                        "name": "records_search",
                        "input": {"name": "Ada"},
                    }
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "t1", "content": [{"json": {"found": 1}}]}},
                {"text": "Summarise."},
            ],
        },
    ]


async def test_tool_choice_none_with_tool_history_sends_eager_tools_but_refuses_calls(
    converse: Converse,
) -> None:
    converse.reply({"toolUse": {"toolUseId": "t2", "name": "records_search", "input": {}}})
    with pytest.raises(ToolIdentityError, match="does not let it call"):
        await BedrockConverseModel(converse.client).complete(
            request(
                *tool_history(), tools=(RECORDS, WEATHER), choice=ToolChoice("none"), model=MODEL
            )
        )
    names = [t["toolSpec"]["name"] for t in converse.calls[0]["toolConfig"]["tools"]]
    assert names == ["records_search"]
    assert "toolChoice" not in converse.calls[0]["toolConfig"]


async def test_error_results_are_marked(converse: Converse) -> None:
    converse.reply({"text": "Sorry."})
    call = ToolCallPart("t1", "records.search", "{}")
    history = [
        Message.user("x"),
        Message("assistant", (call,)),
        Message("tool", (ToolResultPart("t1", "records.search", '"boom"', is_error=True),)),
    ]
    await BedrockConverseModel(converse.client).complete(
        request(*history, tools=(RECORDS,), model=MODEL)
    )
    result = converse.calls[0]["messages"][-1]["content"][0]["toolResult"]
    assert result == {"toolUseId": "t1", "content": [{"text": '"boom"'}], "status": "error"}


async def test_unknown_tool_calls_are_refused(converse: Converse) -> None:
    converse.reply({"toolUse": {"toolUseId": "t1", "name": "weather_lookup", "input": {}}})
    with pytest.raises(ToolIdentityError, match="'weather_lookup'"):
        await BedrockConverseModel(converse.client).complete(request(tools=(RECORDS,), model=MODEL))


@pytest.mark.parametrize("value", ["oops", [1]])
async def test_a_call_whose_input_is_not_an_object_is_refused(
    converse: Converse, value: object
) -> None:
    # Replay sends arguments back as objects: such a call would break the next request.
    converse.reply({"toolUse": {"toolUseId": "t1", "name": "records_search", "input": value}})
    with pytest.raises(ModelError, match=r"\(toolUseId 't1'\) with input of type"):
        await BedrockConverseModel(converse.client).complete(request(tools=(RECORDS,), model=MODEL))


async def test_any_means_some_tool(converse: Converse) -> None:
    converse.reply({"text": "x"})
    await BedrockConverseModel(converse.client).complete(
        request(tools=(RECORDS, deferred(WEATHER, False)), choice=ToolChoice("any"), model=MODEL)
    )
    assert converse.calls[0]["toolConfig"]["toolChoice"] == {"any": {}}


async def test_system_text_in_the_middle_is_refused(converse: Converse) -> None:
    history = [Message.user("hi"), Message.system("Later rule.")]
    with pytest.raises(HistoryReplayError, match="after the conversation started"):
        await BedrockConverseModel(converse.client).complete(
            request(*history, tools=(RECORDS,), model=MODEL)
        )


async def test_service_errors_name_the_model(converse: Converse) -> None:
    converse.stubber.add_client_error("converse", "ValidationException", "bad input")
    with pytest.raises(ModelError, match=f"model {MODEL!r} failed.*bad input"):
        await BedrockConverseModel(converse.client).complete(request(tools=(RECORDS,), model=MODEL))


#: Every stop reason Converse documents, as the adapter reports it (None: refused).
STOPS = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "model_context_window_exceeded": "model_context_window_exceeded",
    # The names the other adapters report for the same stop (OpenAI's content filter).
    "content_filtered": "content_filter",
    "guardrail_intervened": "guardrail_intervened",
    "malformed_model_output": None,
    "malformed_tool_use": None,
}


def test_every_documented_stop_reason_is_decided() -> None:
    # botocore's service model is the documentation: a stop reason it adds must be decided.
    documented = boto3.client("bedrock-runtime", region_name="us-west-2").meta.service_model
    assert set(documented.shape_for("StopReason").enum) == set(STOPS)


@pytest.mark.parametrize(("stop", "reported"), sorted(STOPS.items()))
async def test_stop_reasons_are_reported_in_the_adapters_words(
    converse: Converse, stop: str, reported: str | None
) -> None:
    converse.reply({"text": "partial"}, stop=stop)
    model = BedrockConverseModel(converse.client)
    if reported is None:
        # Bedrock says the reply is broken: it is not an answer (nor an empty end_turn).
        with pytest.raises(ModelError, match=f"stopReason {stop!r} .*retry the request"):
            await model.complete(request(tools=(RECORDS,), model=MODEL))
        return
    reply = await model.complete(request(tools=(RECORDS,), model=MODEL))
    assert reply.stop_reason == reported


async def test_a_stop_reason_converse_does_not_document_is_reported_as_received(
    converse: Converse,
) -> None:
    # As the other adapters report a provider's stop they do not map: never as end_turn.
    converse.reply({"text": "partial"}, stop="some_future_reason")
    reply = await BedrockConverseModel(converse.client).complete(
        request(tools=(RECORDS,), model=MODEL)
    )
    assert reply.stop_reason == "some_future_reason"
