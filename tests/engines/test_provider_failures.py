"""A provider's failures on Temporal, through the real Anthropic SDK: a rate limit or an
overloaded provider is retried by the planning activity, and the run goes on; a request the
provider refuses fails the run at once, with the adapter's words and the planner's note of whose
run and model registration it was."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import pytest

from agentgen.runtime.adapters import AnthropicMessagesModel, ModelError
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.app import Runtime
from tests.adapters.fakes import claude_text, message
from tests.engines.conftest import Harness
from tests.engines.test_durable import attempts, events
from tests.runtime.agents import records_definition

pytestmark = pytest.mark.asyncio(loop_scope="session")


class Provider:
    """Answers each request with the next (status, body); records how many it got."""

    def __init__(self, *answers: tuple[int, dict[str, Any]]) -> None:
        self.answers = list(answers)
        self.requests = 0

    def handler(self, _: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        status, body = self.answers.pop(0)
        return httpx2.Response(status, json=body)

    def model(self) -> AnthropicMessagesModel:
        return AnthropicMessagesModel(
            anthropic.AsyncAnthropic(
                api_key="sk-ant-test",
                base_url="http://stub.local",
                max_retries=0,
                http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler)),
            )
        )


def runtime(durable: Harness, provider: Provider) -> Runtime:
    rt = durable.runtime()
    rt.register_model("claude", provider.model())
    rt.register_agent(
        records_definition(specs=()),
        planner=ModelPlanner("claude", model="claude-opus-4-7"),
        executors={},
    )
    return rt


def error(kind: str, text: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text}}


async def test_a_rate_limited_or_overloaded_provider_is_asked_again(durable: Harness) -> None:
    provider = Provider(
        (429, error("rate_limit_error", "slow down")),
        (529, error("overloaded_error", "Overloaded")),
        (200, message(claude_text("fine"))),
    )
    rt = runtime(durable, provider)
    async with durable.serving(rt):
        outcome = await rt.client("test.agent").run("go", run_id="rate-limited")
    assert outcome.final_text == "fine"
    assert provider.requests == 3
    assert durable.env is not None
    assert attempts(await events(durable.env, "rate-limited")) == [3]


async def test_a_request_the_provider_refuses_fails_the_run_once_with_whose_it_was(
    durable: Harness,
) -> None:
    provider = Provider((400, error("invalid_request_error", "messages: bad")))
    rt = runtime(durable, provider)
    async with durable.serving(rt):
        with pytest.raises(ModelError) as caught:
            await rt.client("test.agent").run("go", run_id="refused-request")
    text = str(caught.value)
    assert "the request for model 'claude-opus-4-7' failed with HTTP 400" in text
    assert "messages: bad" in text
    # The note ModelPlanner adds in the activity crosses to the client with the message.
    assert "planning agent 'test.agent' (run refused-request)" in text
    assert "registered as 'claude'" in text
    assert provider.requests == 1
    assert durable.env is not None
    assert attempts(await events(durable.env, "refused-request")) == [1]
