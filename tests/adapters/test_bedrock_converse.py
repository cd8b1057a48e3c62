"""Bedrock Converse: eager tools work, deferred ones are refused, never loaded eagerly (SPEC I2,
I3). boto3's Stubber answers, after botocore validated the parameters and the canned reply
against the service model."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import boto3  # type: ignore[import-untyped]
import pytest
from botocore.stub import Stubber  # type: ignore[import-untyped]

from agentgen.runtime.adapters import (
    BedrockConverseModel,
    EmptyReplyError,
    HistoryReplayError,
    ModelError,
    ModelRefusalError,
    OutputBudgetError,
    ToolIdentityError,
    ToolSearchUnsupportedError,
)
from agentgen.runtime.adapters.bedrock_converse import REASONING_KEY, REASONING_MODEL_KEY
from agentgen.runtime.engines.temporal.errors import retryable
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
    with pytest.raises(ToolIdentityError, match="tool choice was 'none'"):
        await BedrockConverseModel(converse.client).complete(
            request(
                *tool_history(), tools=(RECORDS, WEATHER), choice=ToolChoice("none"), model=MODEL
            )
        )
    names = [t["toolSpec"]["name"] for t in converse.calls[0]["toolConfig"]["tools"]]
    assert names == ["records_search"]
    assert "toolChoice" not in converse.calls[0]["toolConfig"]


def failed_call(content: str) -> list[Message]:
    call = ToolCallPart("t1", "records.search", "{}")
    return [
        Message.user("x"),
        Message("assistant", (call,)),
        Message("tool", (ToolResultPart("t1", "records.search", content, is_error=True),)),
    ]


#: Model IDs botocore's "only supported by Amazon Nova and Anthropic Claude 3 and 4 models"
#: covers, as foundation models, inference profiles and their ARNs.
STATUS_MODELS = [
    MODEL,
    "anthropic.claude-3-5-haiku-20241022-v1:0",
    "us.anthropic.claude-opus-4-1-20250805-v1:0",
    "global.anthropic.claude-haiku-4-5-20251001-v1:0",
    "amazon.nova-pro-v1:0",
    "eu.amazon.nova-lite-v1:0",
    "arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.amazon.nova-micro-v1:0",
]


@pytest.mark.parametrize("model", STATUS_MODELS)
async def test_error_results_are_marked_for_models_that_take_a_status(
    converse: Converse, model: str
) -> None:
    converse.reply({"text": "Sorry."})
    await BedrockConverseModel(converse.client).complete(
        request(*failed_call('"boom"'), tools=(RECORDS,), model=model)
    )
    result = converse.calls[0]["messages"][-1]["content"][0]["toolResult"]
    assert result == {"toolUseId": "t1", "content": [{"text": '"boom"'}], "status": "error"}


@pytest.mark.parametrize(
    ("model", "content", "sent"),
    [
        ("meta.llama3-3-70b-instruct-v1:0", '"boom"', {"json": {"error": "boom"}}),
        ("us.meta.llama4-scout-17b-instruct-v1:0", "not json", {"json": {"error": "not json"}}),
        ("mistral.mistral-large-2407-v1:0", '{"code": 7}', {"json": {"error": {"code": 7}}}),
        # The runtime's own tool errors already say so.
        ("openai.gpt-oss-120b-1:0", '{"error": {"kind": "x"}}', {"json": {"error": {"kind": "x"}}}),
        # Claude before 3 is not among the documented models.
        ("anthropic.claude-v2:1", '"boom"', {"json": {"error": "boom"}}),
        # An application inference profile's ARN does not say which model it runs.
        (
            "arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/a1b2c3",
            '"boom"',
            {"json": {"error": "boom"}},
        ),
    ],
)
async def test_other_models_are_told_of_an_error_in_the_result_content(
    converse: Converse, model: str, content: str, sent: dict[str, Any]
) -> None:
    converse.reply({"text": "Sorry."})
    await BedrockConverseModel(converse.client).complete(
        request(*failed_call(content), tools=(RECORDS,), model=model)
    )
    result = converse.calls[0]["messages"][-1]["content"][0]["toolResult"]
    assert result == {"toolUseId": "t1", "content": [sent]}


async def test_models_can_be_declared_to_take_an_error_status(converse: Converse) -> None:
    converse.reply({"text": "Sorry."})
    profile = "arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/a1b2c3"
    model = BedrockConverseModel(converse.client, error_status_models=[profile])
    await model.complete(request(*failed_call('"boom"'), tools=(RECORDS,), model=profile))
    assert converse.calls[0]["messages"][-1]["content"][0]["toolResult"]["status"] == "error"


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
    with pytest.raises(ModelError, match=r"\(toolUseId 't1'\) with input of type") as caught:
        await BedrockConverseModel(converse.client).complete(request(tools=(RECORDS,), model=MODEL))
    # Broken as output: a durable run asks again (the message used to say so, the flag not).
    assert caught.value.transient and "later attempt may pass" in str(caught.value)


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
        # Bedrock says the reply is broken: it is not an answer (nor an empty end_turn), and
        # sampling again usually gives a well-formed one, so a durable run asks again.
        with pytest.raises(ModelError, match=f"stopReason {stop!r} .*later attempt may pass") as e:
            await model.complete(request(tools=(RECORDS,), model=MODEL))
        assert e.value.transient and retryable(e.value)
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


@pytest.mark.parametrize(
    ("content", "stop", "remedy"),
    [
        ((), "end_turn", "ask again, or add a user message asking it to go on"),
        (({"text": " \n"},), "end_turn", "ask again"),
        ((), "max_tokens", "raise max_tokens"),
        ((), "content_filtered", "filtered the reply before any text, and would again: check"),
        ((), "some_future_reason", "see its stop reason"),
    ],
)
async def test_a_reply_without_a_call_or_text_is_refused_not_kept(
    converse: Converse, content: tuple[dict[str, Any], ...], stop: str, remedy: str
) -> None:
    converse.reply(*content, stop=stop)
    with pytest.raises(EmptyReplyError) as caught:
        await BedrockConverseModel(converse.client).complete(request(tools=(RECORDS,), model=MODEL))
    assert f"reply of model {MODEL!r} holds no tool call and no text" in str(caught.value)
    assert remedy in str(caught.value)
    # Filtered before any text: a refusal by type as well (the others are not).
    assert isinstance(caught.value, ModelRefusalError) is (stop == "content_filtered")


async def test_replay_never_sends_empty_content_or_blank_text(converse: Converse) -> None:
    converse.reply({"text": "One record."})
    history = tool_history()
    history[1] = Message("assistant", (TextPart("\n\n"), *history[1].tool_calls()))
    await BedrockConverseModel(converse.client).complete(
        request(*history, tools=(RECORDS,), model=MODEL)
    )
    assert converse.calls[0]["messages"][1]["content"] == [
        {"toolUse": {"toolUseId": "t1", "name": "records_search", "input": {"name": "Ada"}}}
    ]


@pytest.mark.parametrize(
    ("history", "where"),
    [
        ([Message.user("Hi"), Message("assistant", ()), Message.user("Hi?")], "1 (assistant)"),
        ([Message.user("Hi"), Message("assistant", (TextPart(" "),))], "1 (assistant)"),
        ([Message.user("")], "0 (user)"),
    ],
)
async def test_messages_without_content_are_refused_before_sending(
    converse: Converse, history: list[Message], where: str
) -> None:
    with pytest.raises(HistoryReplayError, match=rf"message {re.escape(where)} holds no call"):
        await BedrockConverseModel(converse.client).complete(
            request(*history, tools=(RECORDS,), model=MODEL)
        )
    assert converse.calls == []


async def test_a_call_cut_by_max_tokens_is_refused_naming_the_tool(converse: Converse) -> None:
    converse.reply(
        {"toolUse": {"toolUseId": "t9", "name": "records_search", "input": {"name": "A"}}},
        stop="max_tokens",
    )
    with pytest.raises(OutputBudgetError) as caught:
        await BedrockConverseModel(converse.client).complete(request(tools=(RECORDS,), model=MODEL))
    text = str(caught.value)
    assert "while calling 'records.search' (toolUseId 't9', stopReason 'max_tokens')" in text
    assert text.endswith("raise max_tokens")


async def test_a_call_cut_by_the_context_window_is_refused_with_a_shorter_conversation(
    converse: Converse,
) -> None:
    # Before: handed to the run as an ordinary call, though its input may be cut short.
    converse.reply(
        {"toolUse": {"toolUseId": "t9", "name": "records_search", "input": {"name": "A"}}},
        stop="model_context_window_exceeded",
    )
    with pytest.raises(ModelError) as caught:
        await BedrockConverseModel(converse.client).complete(
            request(tools=(RECORDS,), model=MODEL, max_tokens=300)
        )
    error = caught.value
    assert not isinstance(error, OutputBudgetError) and not error.transient
    text = str(error)
    assert "filled the model's context window while calling 'records.search'" in text
    assert "stopReason 'model_context_window_exceeded'" in text
    assert "shorten the conversation" in text and "max_tokens" not in text
    assert error.usage == Usage(50, 7)


async def test_reply_text_that_is_not_unicode_is_refused_by_name(converse: Converse) -> None:
    # Before: accepted, and every later request of the conversation failed to encode.
    converse.reply({"text": "hi \ud83d"})
    with pytest.raises(ModelError) as caught:
        await BedrockConverseModel(converse.client).complete(request(tools=(RECORDS,), model=MODEL))
    text = str(caught.value)
    assert "reply of model 'anthropic.claude-sonnet-4-5-v1:0': content[0] holds text" in text
    assert "$.text ('hi \\ud83d')" in text
    assert caught.value.transient and caught.value.usage == Usage(50, 7)


async def test_answering_without_tools_after_forced_calls_of_deferred_tools(
    converse: Converse,
) -> None:
    # Every tool is deferred; the conversation called one by forcing it. Converse rejects tool
    # blocks without a tool configuration, so the called tool is sent (and no call allowed).
    converse.reply({"text": "Sunny."})
    history = [
        Message.user("Weather?"),
        Message("assistant", (ToolCallPart("t1", "weather.lookup", '{"city": "Paris"}'),)),
        Message("tool", (ToolResultPart("t1", "weather.lookup", '{"t": 1}'),)),
    ]
    reply = await BedrockConverseModel(converse.client).complete(
        request(
            *history, tools=(WEATHER, deferred(RECORDS)), choice=ToolChoice("none"), model=MODEL
        )
    )
    assert reply.message.text == "Sunny."
    [params] = converse.calls
    names = [tool["toolSpec"]["name"] for tool in params["toolConfig"]["tools"]]
    assert names == ["weather_lookup"] and "toolChoice" not in params["toolConfig"]


async def test_answering_without_tools_when_no_called_tool_is_offered_is_refused(
    converse: Converse,
) -> None:
    history = [
        Message.user("Weather?"),
        Message("assistant", (ToolCallPart("t1", "weather.lookup", "{}"),)),
        Message("tool", (ToolResultPart("t1", "weather.lookup", "{}"),)),
    ]
    with pytest.raises(HistoryReplayError, match="only accepts with a tool configuration"):
        await BedrockConverseModel(converse.client).complete(
            request(*history, tools=(deferred(RECORDS),), choice=ToolChoice("none"), model=MODEL)
        )
    assert converse.calls == []


# Reasoning (DeepSeek-R1 and gpt-oss always reason; Claude does with thinking) -------------

SIGNED = {"reasoningText": {"text": "Ada is a customer name.", "signature": "sig-1"}}


async def test_reasoning_is_kept_and_replayed_where_it_was(converse: Converse) -> None:
    # Before: every reply holding reasoningContent was refused ("does not handle"), so models
    # that always reason could not be used; Converse wants Claude's signed reasoning back with
    # the call it preceded.
    converse.reply(
        {"reasoningContent": SIGNED},
        {"text": "Looking."},
        {"reasoningContent": {"redactedContent": b"\x00opaque\xff"}},
        {"toolUse": {"toolUseId": "t1", "name": "records_search", "input": {"name": "Ada"}}},
        stop="tool_use",
    )
    model = BedrockConverseModel(converse.client)
    asked = Message.user("Find Ada")
    first = await model.complete(request(asked, tools=(RECORDS,), model=MODEL))
    assert [part.kind for part in first.message.parts] == ["text", "tool_call"]
    # Stored as JSON, as a transcript store keeps it.
    stored = Message.from_json(json.loads(json.dumps(first.message.to_json())))
    assert stored.metadata[REASONING_KEY]["blocks"][1] == {
        "at": 1,
        "block": {"redactedContent": "AG9wYXF1Zf8="},
    }
    converse.reply({"text": "One record."})
    result = ToolResultPart("t1", "records.search", '{"found": 1}')
    await model.complete(
        request(asked, stored, Message("tool", (result,)), tools=(RECORDS,), model=MODEL)
    )
    assert converse.calls[1]["messages"][1] == {
        "role": "assistant",
        "content": [
            {"reasoningContent": SIGNED},
            {"text": "Looking."},
            {"reasoningContent": {"redactedContent": b"\x00opaque\xff"}},
            {"toolUse": {"toolUseId": "t1", "name": "records_search", "input": {"name": "Ada"}}},
        ],
    }


async def test_reasoning_goes_back_only_to_the_model_that_produced_it(
    converse: Converse,
) -> None:
    # Before: replayed to whichever model continued the conversation, which rejects another
    # Claude model's signature ("Invalid signature in thinking block") and is not its own.
    converse.reply(
        {"reasoningContent": SIGNED},
        {"text": "Looking."},
        {"toolUse": {"toolUseId": "t1", "name": "records_search", "input": {"name": "Ada"}}},
        stop="tool_use",
    )
    model = BedrockConverseModel(converse.client)
    asked = Message.user("Find Ada")
    first = await model.complete(request(asked, tools=(RECORDS,), model=MODEL))
    # The record is the one every agentgen reads (a worker of the release before, planning the
    # next turn of a durable run, refused a record with another shape or version, failing the
    # run); the model that produced it is kept beside it, where such a reader does not look.
    assert first.message.metadata[REASONING_KEY] == {
        "version": 1,
        "blocks": [{"at": 0, "block": SIGNED}],
    }
    assert first.message.metadata[REASONING_MODEL_KEY] == MODEL
    stored = Message.from_json(json.loads(json.dumps(first.message.to_json())))
    result = Message("tool", (ToolResultPart("t1", "records.search", '{"found": 1}'),))
    for model_id in ("amazon.nova-pro-v1:0", MODEL):
        converse.reply({"text": "One record."})
        await model.complete(request(asked, stored, result, tools=(RECORDS,), model=model_id))
    other, same = (call["messages"][1]["content"] for call in converse.calls[1:])
    assert other == [
        {"text": "Looking."},
        {"toolUse": {"toolUseId": "t1", "name": "records_search", "input": {"name": "Ada"}}},
    ]
    assert same == [{"reasoningContent": SIGNED}, *other]


async def test_reasoning_stored_without_its_model_is_replayed_as_before(
    converse: Converse,
) -> None:
    # Version 1 records do not say which model produced them: replayed as they were.
    converse.reply({"text": "Done."})
    record = {"version": 1, "blocks": [{"at": 0, "block": SIGNED}]}
    history = [
        Message.user("Hi"),
        Message("assistant", (TextPart("Hello."),), {REASONING_KEY: record}),
        Message.user("Bye"),
    ]
    await BedrockConverseModel(converse.client).complete(
        request(*history, tools=(RECORDS,), model="amazon.nova-pro-v1:0")
    )
    assert converse.calls[0]["messages"][1]["content"] == [
        {"reasoningContent": SIGNED},
        {"text": "Hello."},
    ]


@pytest.mark.parametrize(
    ("requested", "replayed"), [("amazon.nova-pro-v1:0", False), (MODEL, True)]
)
async def test_reasoning_stored_without_its_model_goes_back_to_the_model_planned_with(
    converse: Converse, requested: str, replayed: bool
) -> None:
    # ModelPlanner records the model each reply was requested from (agentgen.usage), the same
    # ID the reasoning's own model key holds since: a version 1 record with it is replayed to
    # that model only. Before: to any model, which rejects another Claude's signature.
    converse.reply({"text": "Done."})
    record = {"version": 1, "blocks": [{"at": 0, "block": SIGNED}]}
    usage = {"model": MODEL, "input_tokens": 5, "output_tokens": 2}
    said = Message(
        "assistant", (TextPart("Hello."),), {REASONING_KEY: record, "agentgen.usage": usage}
    )
    history = [Message.user("Hi"), said, Message.user("Bye")]
    await BedrockConverseModel(converse.client).complete(
        request(*history, tools=(RECORDS,), model=requested)
    )
    sent = converse.calls[0]["messages"][1]["content"]
    assert sent == ([{"reasoningContent": SIGNED}] if replayed else []) + [{"text": "Hello."}]


async def test_a_reply_of_reasoning_only_is_refused_as_empty(converse: Converse) -> None:
    converse.reply({"reasoningContent": SIGNED}, {"text": " "})
    with pytest.raises(EmptyReplyError):
        await BedrockConverseModel(converse.client).complete(request(tools=(RECORDS,), model=MODEL))


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({"version": 1, "blocks": [{"at": 0, "block": {"reasoningText": {}}}]}, "must be {"),
        ({"version": 1, "blocks": [{"at": 0, "block": {"redactedContent": "%%"}}]}, "must be {"),
        ({"version": 1, "blocks": [{"at": 5, "block": SIGNED}]}, "anchored at 5"),
        ({"version": 2, "blocks": []}, "must be version 1, got 2"),
        ({"version": 1, "model": MODEL, "blocks": []}, "exactly 'blocks', 'version'"),
        ([], "must be an object, got list"),
        ({"version": 1, "blocks": [{"at": 1, "block": SIGNED}]}, "no call, result or text"),
    ],
)
async def test_damaged_or_empty_reasoning_records_are_refused_before_sending(
    converse: Converse, record: dict[str, Any], problem: str
) -> None:
    history = [
        Message.user("Hi"),
        Message("assistant", (TextPart(" "),), {REASONING_KEY: record}),
        Message.user("Hi?"),
    ]
    await _refused_before_sending(converse, history, problem)


@pytest.mark.parametrize("model", ["", 7, None])
async def test_a_damaged_reasoning_model_is_refused_before_sending(
    converse: Converse, model: object
) -> None:
    record = {"version": 1, "blocks": [{"at": 0, "block": SIGNED}]}
    metadata = {REASONING_KEY: record, REASONING_MODEL_KEY: model}
    history = [
        Message.user("Hi"),
        Message("assistant", (TextPart("Hello."),), metadata),
        Message.user("Hi?"),
    ]
    problem = f"metadata {REASONING_MODEL_KEY!r} must be the model ID that produced"
    await _refused_before_sending(converse, history, problem)


async def _refused_before_sending(converse: Converse, history: list[Message], problem: str) -> None:
    with pytest.raises(HistoryReplayError, match=re.escape(problem)) as caught:
        await BedrockConverseModel(converse.client).complete(
            request(*history, tools=(RECORDS,), model=MODEL)
        )
    assert "message 1 (assistant)" in str(caught.value)
    assert converse.calls == []


@pytest.mark.parametrize(
    ("stop", "cause", "remedy"),
    [
        ("content_filtered", "the provider's content filter blocked it", "content policy"),
        ("guardrail_intervened", "a Bedrock guardrail intervened", "guardrail's configuration"),
    ],
)
async def test_calls_in_a_reply_the_provider_filtered_are_not_run(
    converse: Converse, stop: str, cause: str, remedy: str
) -> None:
    # Before: handed to the run as ordinary calls (and run), though the provider blocked them.
    converse.reply(
        {"text": "Looking"},
        {"toolUse": {"toolUseId": "t9", "name": "records_search", "input": {"name": "A"}}},
        stop=stop,
    )
    with pytest.raises(ModelError) as caught:
        await BedrockConverseModel(converse.client).complete(request(tools=(RECORDS,), model=MODEL))
    error = caught.value
    text = str(error)
    assert text.startswith(
        f"bedrock converse: reply of model {MODEL!r} was filtered by the provider "
        f"(stopReason {stop!r}: {cause}); none of what it holds (1 tool call) is run"
    )
    assert remedy in text
    assert not error.transient and not retryable(error)
    assert error.usage == Usage(50, 7)
    assert isinstance(error, ModelRefusalError)  # told from other failures by type


@pytest.mark.parametrize("stop", ["content_filtered", "guardrail_intervened"])
async def test_a_filtered_reply_without_calls_keeps_its_stop_reason(
    converse: Converse, stop: str
) -> None:
    # Not an answer either: the planner refuses a final answer with this stop reason.
    converse.reply({"text": "partial"}, stop=stop)
    reply = await BedrockConverseModel(converse.client).complete(
        request(tools=(RECORDS,), model=MODEL)
    )
    assert reply.stop_reason == STOPS[stop] and reply.message.text == "partial"


#: What Bedrock answers (HTTP 400, ValidationException) when a model that thinks gets a tool
#: loop whose assistant turn does not begin with its thinking.
THINKING_REQUIRED = (
    "The model returned the following errors: messages.1.content.0.type: Expected `thinking` "
    "or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final "
    "`assistant` message must start with a thinking block (preceeding the lastmost set of "
    "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from "
    "previous turns. To avoid this requirement, disable `thinking`. Please consult our "
    "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
THINKER = "us.anthropic.claude-opus-5"


async def test_a_model_switch_in_the_middle_of_a_tool_loop_is_named_when_refused(
    converse: Converse,
) -> None:
    # The reasoning of the turn that made the call cannot go to another model (its signature
    # is bound to the model that wrote it), so that turn goes without it; a model that thinks
    # refuses such a turn. Before: the provider's 400 passed as is, saying to "include thinking
    # blocks from previous turns" and "fix what it names", neither of which the user can do.
    converse.reply(
        {"reasoningContent": SIGNED},
        {"toolUse": {"toolUseId": "t1", "name": "records_search", "input": {"name": "Ada"}}},
        stop="tool_use",
    )
    model = BedrockConverseModel(converse.client)
    asked = Message.user("Find Ada")
    first = await model.complete(request(asked, tools=(RECORDS,), model=MODEL))
    result = Message("tool", (ToolResultPart("t1", "records.search", '{"found": 1}'),))
    converse.stubber.add_client_error(
        "converse",
        service_error_code="ValidationException",
        service_message=THINKING_REQUIRED,
        http_status_code=400,
    )
    with pytest.raises(HistoryReplayError) as caught:
        await model.complete(request(asked, first.message, result, tools=(RECORDS,), model=THINKER))
    # What was sent: the call without the other model's reasoning.
    assert converse.calls[1]["messages"][1]["content"] == [
        {"toolUse": {"toolUseId": "t1", "name": "records_search", "input": {"name": "Ada"}}}
    ]
    message = str(caught.value)
    assert f"model {THINKER!r}" in message and f"model {MODEL!r}" in message
    assert "message 1 (assistant)" in message
    assert f"Continue the tool loop with model {MODEL!r}" in message and caught.value.status == 400
    assert not retryable(caught.value)


async def test_a_tool_loop_made_without_reasoning_is_named_when_a_thinking_model_refuses_it(
    converse: Converse,
) -> None:
    converse.stubber.add_client_error(
        "converse",
        service_error_code="ValidationException",
        service_message=THINKING_REQUIRED,
        http_status_code=400,
    )
    call = ToolCallPart("t1", "records.search", '{"name": "Ada"}')
    made = Message("assistant", (call,), {"agentgen.usage": {"model": "amazon.nova-pro-v1:0"}})
    result = Message("tool", (ToolResultPart("t1", "records.search", "{}"),))
    with pytest.raises(HistoryReplayError, match=r"made by model 'amazon.nova-pro-v1:0' without"):
        await BedrockConverseModel(converse.client).complete(
            request(Message.user("Find Ada"), made, result, tools=(RECORDS,), model=THINKER)
        )


async def test_other_refusals_of_the_same_kind_pass_as_the_provider_gave_them(
    converse: Converse,
) -> None:
    # The turn's own reasoning went back: the translation would say something false.
    converse.reply(
        {"reasoningContent": SIGNED},
        {"toolUse": {"toolUseId": "t1", "name": "records_search", "input": {}}},
        stop="tool_use",
    )
    model = BedrockConverseModel(converse.client)
    asked = Message.user("Find Ada")
    first = await model.complete(request(asked, tools=(RECORDS,), model=MODEL))
    result = Message("tool", (ToolResultPart("t1", "records.search", "{}"),))
    converse.stubber.add_client_error(
        "converse", "ValidationException", THINKING_REQUIRED, http_status_code=400
    )
    with pytest.raises(ModelError, match="fix what it names") as caught:
        await model.complete(request(asked, first.message, result, tools=(RECORDS,), model=MODEL))
    assert not isinstance(caught.value, HistoryReplayError)
