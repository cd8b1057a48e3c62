"""A tool name or call ID a model made up reaches the application's error as its first 80
characters, as the run loop quotes one: whole, a 200 KB name went into the error message, and
from there into logs, traces and retries."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentgen.runtime.adapters import (
    AnthropicMessagesModel,
    BedrockConverseModel,
    DuplicateCallIdError,
    OpenAIResponsesModel,
    ToolIdentityError,
)
from agentgen.runtime.messages import Message
from agentgen.runtime.model_client import ToolChoice
from tests.adapters.fakes import (
    anthropic_client,
    anthropic_server,
    function_call,
    message,
    openai_client,
    openai_server,
    response,
    tool_use,
)
from tests.adapters.test_anthropic_messages import MODEL as CLAUDE
from tests.adapters.test_bedrock_converse import Converse
from tests.adapters.tools import RECORDS, request

#: A made-up name or ID of 200 KB: its first 80 characters are "x", then come "y"s.
HUGE = "x" * 80 + "y" * 200_000
#: How the error quotes it.
QUOTED = "'" + "x" * 80 + "...'"
NONE = ToolChoice("none")


async def anthropic(*blocks: dict[str, Any], choice: ToolChoice | None = None) -> None:
    server = anthropic_server(message(*blocks, stop_reason="tool_use"))
    model = AnthropicMessagesModel(anthropic_client(server))
    await model.complete(request(tools=(RECORDS,), choice=choice, model=CLAUDE))


async def openai(*items: dict[str, Any], choice: ToolChoice | None = None) -> None:
    server = openai_server(response(*items))
    model = OpenAIResponsesModel(openai_client(server))
    await model.complete(request(tools=(RECORDS,), choice=choice, max_tokens=None))


async def bedrock(*uses: tuple[str, str], choice: ToolChoice | None = None) -> None:
    converse = Converse()
    converse.reply(
        *({"toolUse": {"toolUseId": i, "name": n, "input": {}}} for i, n in uses), stop="tool_use"
    )
    with converse.stubber:
        await BedrockConverseModel(converse.client).complete(
            request(Message.user("go"), tools=(RECORDS,), choice=choice, model="m")
        )


CASES: list[tuple[str, type[Exception], Callable[[], Awaitable[None]]]] = [
    ("anthropic-unknown-tool", ToolIdentityError, lambda: anthropic(tool_use("t1", HUGE, {}))),
    (
        "anthropic-tool-choice-none",
        ToolIdentityError,
        lambda: anthropic(tool_use("t1", HUGE, {}), choice=NONE),
    ),
    (
        "anthropic-repeated-call-id",
        DuplicateCallIdError,
        lambda: anthropic(
            tool_use(HUGE, "records_search", {"name": "a"}),
            tool_use(HUGE, "records_search", {"name": "b"}),
        ),
    ),
    ("openai-unknown-tool", ToolIdentityError, lambda: openai(function_call("c1", HUGE))),
    (
        "openai-tool-choice-none",
        ToolIdentityError,
        lambda: openai(function_call("c1", HUGE), choice=NONE),
    ),
    (
        "openai-repeated-call-id",
        DuplicateCallIdError,
        lambda: openai(
            function_call(HUGE, "records_search", '{"name":"a"}'),
            {**function_call(HUGE, "records_search", '{"name":"b"}'), "id": "fc_2"},
        ),
    ),
    ("bedrock-unknown-tool", ToolIdentityError, lambda: bedrock(("t1", HUGE))),
    ("bedrock-tool-choice-none", ToolIdentityError, lambda: bedrock(("t1", HUGE), choice=NONE)),
    (
        "bedrock-repeated-call-id",
        DuplicateCallIdError,
        lambda: bedrock((HUGE, "records_search"), (HUGE, "records_search")),
    ),
]


@pytest.mark.parametrize(
    ("error", "reply"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
async def test_a_made_up_name_or_call_id_is_quoted_by_its_first_80_characters(
    error: type[Exception], reply: Callable[[], Awaitable[None]]
) -> None:
    with pytest.raises(error) as caught:
        await reply()
    text = str(caught.value)
    assert QUOTED in text
    assert "y" * 10 not in text
    assert len(text) < 1_000
