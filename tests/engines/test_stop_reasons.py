"""A run's final answer and why it stopped, on both engines, through the real SDKs: the outcome
and the stored message say the stop reason, and a final answer that did not finish (cut at
max_tokens, refused, filtered) fails the run with ``IncompleteAnswerError`` rather than passing
for an answer, unless the planner was told to accept that stop."""

from __future__ import annotations

from typing import Any

import pytest

from agentgen.runtime import (
    IncompleteAnswerError,
    ModelError,
    ModelRefusalError,
    RefusedAnswerError,
)
from agentgen.runtime.adapters import (
    AnthropicMessagesModel,
    BedrockConverseModel,
    OpenAIResponsesModel,
)
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.model_client import STOP_REASON_METADATA_KEY, ModelClient
from tests.adapters.fakes import (
    anthropic_client,
    anthropic_server,
    claude_text,
    message,
    openai_client,
    openai_server,
    response,
    tool_use,
)
from tests.adapters.test_bedrock_converse import Converse
from tests.engines.conftest import Harness
from tests.runtime.agents import records_definition

pytestmark = pytest.mark.asyncio(loop_scope="session")


def claude(reply: dict[str, Any]) -> AnthropicMessagesModel:
    return AnthropicMessagesModel(anthropic_client(anthropic_server(reply)))


async def run(harness: Harness, model: ModelClient, planner: ModelPlanner, run_id: str) -> Any:
    rt = harness.runtime()
    rt.register_model("m", model)
    rt.register_agent(records_definition(specs=()), planner=planner, executors={})
    async with harness.serving(rt):
        return await rt.client("test.agent").run("Explain", run_id=run_id)


async def test_a_finished_answer_says_why_it_stopped(harness: Harness) -> None:
    model = claude(message(claude_text("Three steps."), stop_reason="end_turn"))
    outcome = await run(harness, model, ModelPlanner("m", model="claude-opus-4-7"), "stop-finished")
    assert (outcome.final_text, outcome.stop_reason) == ("Three steps.", "end_turn")
    assert outcome.transcript[-1].metadata[STOP_REASON_METADATA_KEY] == "end_turn"


async def test_an_answer_cut_at_max_tokens_fails_the_run(harness: Harness) -> None:
    model = claude(
        message(claude_text("The three steps are: 1) open the"), stop_reason="max_tokens")
    )
    planner = ModelPlanner("m", model="claude-opus-4-7", max_tokens=64)
    with pytest.raises(IncompleteAnswerError) as caught:
        await run(harness, model, planner, "stop-cut-answer")
    assert not isinstance(caught.value, ModelRefusalError)  # cut short, not refused
    text = str(caught.value)
    assert "planning agent 'test.agent' (run stop-cut-answer)" in text
    assert "model 'claude-opus-4-7' (the model client registered as 'm')" in text
    assert "stop reason 'max_tokens' (cut at max_tokens, 64)" in text
    assert "raise ModelPlanner(max_tokens=...)" in text


async def test_an_accepted_stop_is_returned_and_said(harness: Harness) -> None:
    model = claude(
        message(claude_text("The three steps are: 1) open the"), stop_reason="max_tokens")
    )
    planner = ModelPlanner("m", model="claude-opus-4-7", accept_stop_reasons=["max_tokens"])
    outcome = await run(harness, model, planner, "stop-accepted-cut")
    assert outcome.final_text == "The three steps are: 1) open the"
    assert outcome.stop_reason == "max_tokens"
    assert outcome.transcript[-1].metadata[STOP_REASON_METADATA_KEY] == "max_tokens"


async def test_a_refused_answer_fails_the_run(harness: Harness) -> None:
    refusal = {
        "type": "message",
        "id": "m1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": "I can't help with that."}],
    }
    model = OpenAIResponsesModel(openai_client(openai_server(response(refusal))))
    # Typed as every refusal is, and still the IncompleteAnswerError it always was; the type
    # crosses the activity boundary.
    with pytest.raises(RefusedAnswerError, match="'refusal' .the model declined to answer") as c:
        await run(harness, model, ModelPlanner("m", model="gpt-5.4"), "stop-refused-answer")
    assert isinstance(c.value, IncompleteAnswerError)
    assert isinstance(c.value, ModelRefusalError)
    if not harness.durable:  # in process the error carries the refused reply's usage
        assert c.value.usage is not None
        assert (c.value.usage.input_tokens, c.value.usage.output_tokens) == (100, 20)


async def test_a_filtered_answer_fails_the_run(harness: Harness) -> None:
    converse = Converse()
    converse.reply({"text": "Here is how to"}, stop="content_filtered")
    with converse.stubber:
        with pytest.raises(RefusedAnswerError, match="content filter blocked the answer"):
            await run(
                harness,
                BedrockConverseModel(converse.client),
                ModelPlanner("m", model="amazon.nova-pro-v1:0"),
                "stop-filtered-answer",
            )


async def test_a_refused_reply_with_calls_fails_the_run_as_a_refusal(harness: Harness) -> None:
    # The type crosses the activity boundary: the client catches it as in process.
    model = claude(message(tool_use("t1", "records_search", {"name": "A"}), stop_reason="refusal"))
    with pytest.raises(ModelRefusalError) as caught:
        await run(harness, model, ModelPlanner("m", model="claude-opus-4-7"), "stop-refused-calls")
    assert isinstance(caught.value, ModelError)
    assert "was refused by the provider (stop_reason 'refusal'" in str(caught.value)
    assert "none of what it holds (1 tool call) is run" in str(caught.value)
