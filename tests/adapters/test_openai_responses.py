"""OpenAI Responses adapter: client tool search through the real SDK, at the wire (SPEC I1, I3, I4).

Every request body is checked against the SDK's parameter types by the fake server, and every
canned reply is parsed by the SDK's response models (strict response validation).
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from openai import AsyncOpenAI

from agentgen.runtime.adapters import (
    EmptyRefusalError,
    EmptyReplyError,
    ModelError,
    ModelRefusalError,
    OpenAIResponsesModel,
    OutputBudgetError,
    ProviderNameError,
    ToolIdentityError,
)
from agentgen.runtime.adapters.openai_search import METADATA_KEY
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import ToolChoice, Usage
from tests.adapters.fakes import (
    function_call,
    openai_client,
    openai_server,
    reasoning,
    response,
    search_call,
    text,
)
from tests.adapters.tools import ALERTS, INVOICE, RECORDS, WEATHER, request, tool

DEFERRED_WORDS = ("weather", "Weather", "alerts", "invoice", "Invoice", "billing")


def adapter(server: Any, **options: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(openai_client(server), **options)


async def test_first_request_has_eager_tools_and_one_query_only_search_tool() -> None:
    server = openai_server(response(text("Hello")))
    await adapter(server).complete(request())
    body = server.bodies[0]
    assert [t.get("name") for t in body["tools"]] == ["records_search", None]
    search = body["tools"][1]
    assert search["type"] == "tool_search" and search["execution"] == "client"
    assert set(search["parameters"]["properties"]) == {"query"}
    assert search["parameters"]["required"] == ["query"]
    assert search["parameters"]["additionalProperties"] is False
    assert [t["type"] for t in body["tools"]].count("tool_search") == 1
    # No directory: no deferred name or description anywhere in the request.
    encoded = json.dumps({key: value for key, value in body.items() if key != "input"})
    for word in DEFERRED_WORDS:
        assert word not in encoded
    assert body["max_output_tokens"] == 1000
    assert "tool_choice" not in body


async def test_search_load_call_result_final_answer() -> None:
    server = openai_server(
        response(search_call("call_s1", "weather forecast"), output_tokens=30),
        response(
            function_call("call_b1", "weather_lookup", '{"city":"Paris"}', "weather_lookup"),
            output_tokens=12,
        ),
        response(text("It is sunny in Paris.")),
    )
    model = adapter(server)
    first = await model.complete(request())

    # One invocation, two rounds: the search was answered inside the adapter.
    assert len(server.bodies) == 2
    second = server.bodies[1]
    assert second["max_output_tokens"] == 1000 - 30
    assert second["input"][-2] == search_call("call_s1", "weather forecast")
    output = second["input"][-1]
    assert output["type"] == "tool_search_output"
    assert (output["call_id"], output["execution"], output["status"]) == (
        "call_s1",
        "client",
        "completed",
    )
    assert [t["name"] for t in output["tools"]] == ["weather_lookup", "weather_alerts"]
    loaded = output["tools"][0]
    assert loaded["type"] == "namespace" and loaded["description"] == WEATHER.description
    assert loaded["tools"] == [
        {
            "type": "function",
            "name": "weather_lookup",
            "description": WEATHER.description,
            "parameters": WEATHER.parameters(),
            "strict": False,
            "defer_loading": True,
        }
    ]
    # Planners see an ordinary call under the canonical ID.
    assert first.message.parts == (ToolCallPart("call_b1", "weather.lookup", '{"city":"Paris"}'),)
    assert first.usage == Usage(200, 42)
    assert first.stop_reason == "tool_use"
    meta = first.message.metadata[METADATA_KEY]
    assert [(r["at"], r["item"]["type"]) for r in meta["records"]] == [
        (0, "tool_search_call"),
        (0, "tool_search_output"),
    ]
    assert meta["namespaces"] == {"call_b1": "weather_lookup"}

    # The transcript goes through storage, then the conversation continues.
    stored = [m.to_json() for m in (Message.user("What is the weather in Paris?"), first.message)]
    history = [Message.from_json(json.loads(json.dumps(m))) for m in stored]
    result = Message("tool", (ToolResultPart("call_b1", "weather.lookup", '{"sky":"sunny"}'),))
    final = await model.complete(request(*history, result))
    assert final.message.text == "It is sunny in Paris."
    assert final.message.metadata == {}
    replayed = server.bodies[2]["input"]
    assert [item.get("type") for item in replayed] == [
        "message",
        "tool_search_call",
        "tool_search_output",
        "function_call",
        "function_call_output",
    ]
    assert replayed[3]["namespace"] == "weather_lookup"
    assert replayed[2] == output
    assert replayed[4] == {
        "type": "function_call_output",
        "call_id": "call_b1",
        "output": '{"sky":"sunny"}',
    }


async def test_search_rounds_work_without_a_stored_response() -> None:
    # Stateless requests (store false, an organization under Zero Data Retention) cannot look a
    # reasoning item up by its ID: the next round gets it with the encrypted content the API
    # returned with it. Nothing relies on a store: no store or include is sent, and a later
    # request to the same model replays the reasoning item with that content too (stored with
    # the message), beside the output-item IDs it pairs with.
    encrypted = {**reasoning(), "encrypted_content": "gAAAAB-opaque"}
    server = openai_server(
        response(encrypted, search_call("s1", "weather"), output_tokens=30),
        response(function_call("c1", "weather_lookup", '{"city":"Paris"}', "weather_lookup")),
        response(text("Sunny.")),
    )
    model = adapter(server)
    asked = Message.user("Weather in Paris?")
    first = await model.complete(request(asked))
    assert encrypted in server.bodies[1]["input"]
    stored = Message.from_json(json.loads(json.dumps(first.message.to_json())))
    result = Message("tool", (ToolResultPart("c1", "weather.lookup", '{"sky":"sunny"}'),))
    await model.complete(request(asked, stored, result))
    assert all("store" not in body and "include" not in body for body in server.bodies)
    later = server.bodies[2]["input"]
    assert [item for item in later if item["type"] == "reasoning"] == [encrypted]
    assert [item["id"] for item in later if "id" in item] == ["rs_1", "tsc_s1", "fc_c1"]


async def test_each_round_gets_what_the_earlier_rounds_left_of_the_budget() -> None:
    server = openai_server(
        response(reasoning(), search_call("s1", "weather"), output_tokens=100),
        response(search_call("s2", "alerts region"), output_tokens=150),
        response(text("done"), output_tokens=10),
    )
    reply = await adapter(server).complete(request(max_tokens=400))
    assert [body["max_output_tokens"] for body in server.bodies] == [400, 300, 150]
    # Reasoning goes back as received between rounds, but is not stored.
    assert reasoning() in server.bodies[1]["input"]
    assert reply.usage.output_tokens == 260
    items = [r["item"]["type"] for r in reply.message.metadata[METADATA_KEY]["records"]]
    assert items == ["tool_search_call", "tool_search_output"] * 2


async def test_search_that_exhausts_the_budget_is_an_error() -> None:
    server = openai_server(response(search_call("s1", "weather"), output_tokens=300))
    with pytest.raises(OutputBudgetError, match="whole output budget of 300"):
        await adapter(server).complete(request(max_tokens=300))


async def test_search_round_cut_by_the_output_limit_is_an_error() -> None:
    server = openai_server(
        response(
            search_call("s1", "weather"),
            status="incomplete",
            incomplete="max_output_tokens",
            output_tokens=5,
        )
    )
    with pytest.raises(OutputBudgetError, match="output limit"):
        await adapter(server).complete(request())


@pytest.mark.parametrize("max_tokens", [None, 0, -5])
async def test_deferred_tools_need_a_positive_max_tokens(max_tokens: int | None) -> None:
    server = openai_server()
    with pytest.raises(OutputBudgetError, match=r"weather\.lookup.*positive max_tokens"):
        await adapter(server).complete(request(max_tokens=max_tokens))
    assert server.bodies == []


async def test_without_deferred_tools_max_tokens_may_be_left_out() -> None:
    server = openai_server(response(text("hi")))
    await adapter(server).complete(request(tools=(RECORDS,), max_tokens=None))
    assert "max_output_tokens" not in server.bodies[0]
    assert [t["type"] for t in server.bodies[0]["tools"]] == ["function"]


async def test_a_response_mixing_search_and_business_calls_returns_at_once() -> None:
    server = openai_server(
        response(
            search_call("s1", "invoice"),
            function_call("c1", "records_search", '{"name":"Ada"}'),
        )
    )
    reply = await adapter(server).complete(request())
    assert len(server.bodies) == 1
    assert reply.message.tool_calls() == [ToolCallPart("c1", "records.search", '{"name":"Ada"}')]
    records = reply.message.metadata[METADATA_KEY]["records"]
    # Native order: the search call, the business call (part 0), then the search output.
    assert [(r["at"], r["item"]["type"]) for r in records] == [
        (0, "tool_search_call"),
        (1, "tool_search_output"),
    ]
    assert records[1]["item"]["tools"][0]["name"] == "billing_invoice"


async def test_search_finds_only_the_requests_deferred_tools() -> None:
    server = openai_server(
        response(search_call("s1", "records weather invoice alerts")),
        response(text("ok")),
    )
    # billing.invoice is not permitted in this request; records.search is eager.
    await adapter(server).complete(request(tools=(RECORDS, WEATHER, ALERTS)))
    names = [t["name"] for t in server.bodies[1]["input"][-1]["tools"]]
    assert sorted(names) == ["weather_alerts", "weather_lookup"]


async def test_search_returns_at_most_the_limit_best_first() -> None:
    catalog = tuple(
        tool(f"kit.tool_{i:02d}", f"Widget helper number {i}.", deferred=True) for i in range(12)
    )
    server = openai_server(response(search_call("s1", "widget helper")), response(text("ok")))
    await adapter(server, search_limit=3).complete(request(tools=catalog))
    names = [t["name"] for t in server.bodies[1]["input"][-1]["tools"]]
    # Equal scores are ordered by tool ID.
    assert names == ["kit_tool_00", "kit_tool_01", "kit_tool_02"]


async def test_a_search_without_hits_loads_nothing() -> None:
    server = openai_server(response(search_call("s1", "spaceship")), response(text("no tool")))
    await adapter(server).complete(request())
    assert server.bodies[1]["input"][-1]["tools"] == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (function_call("c1", "weather_lookup"), "without the namespace"),
        (function_call("c1", "weather_lookup", namespace="weather"), "namespace 'weather'"),
        (function_call("c1", "weather_alerts", namespace="weather_alerts"), "no search loaded"),
        (function_call("c1", "records_search", namespace="records_search"), "no search loaded"),
        (function_call("c1", "calendar_create"), "not a tool this request permits"),
    ],
)
async def test_calls_must_carry_the_identity_their_tool_was_loaded_with(
    call: dict[str, Any], message: str
) -> None:
    server = openai_server(
        response(search_call("s1", "weather forecast lookup")),
        response(call),
    )
    # The search loads weather_lookup (first hit) and weather_alerts; limit 1 keeps only lookup.
    with pytest.raises(ToolIdentityError, match=message):
        await adapter(server, search_limit=1).complete(request())


async def test_a_call_to_a_tool_outside_the_request_is_refused() -> None:
    server = openai_server(response(function_call("c1", "billing_invoice")))
    with pytest.raises(ToolIdentityError, match="'billing_invoice', which is not a tool"):
        await adapter(server).complete(request(tools=(RECORDS, WEATHER)))


async def test_forcing_a_deferred_tool_sends_it_eagerly_without_search() -> None:
    server = openai_server(response(function_call("c1", "weather_lookup", '{"city":"Oslo"}')))
    reply = await adapter(server).complete(
        request(choice=ToolChoice("tool", "weather.lookup"), max_tokens=None)
    )
    body = server.bodies[0]
    assert [t["name"] for t in body["tools"]] == ["records_search", "weather_lookup"]
    assert body["tool_choice"] == {"type": "function", "name": "weather_lookup"}
    assert all(t["type"] == "function" for t in body["tools"])
    assert reply.message.tool_calls()[0].tool_id == "weather.lookup"


async def test_tool_choice_none_disables_discovery() -> None:
    server = openai_server(response(text("no tools")))
    await adapter(server).complete(request(choice=ToolChoice("none"), max_tokens=None))
    body = server.bodies[0]
    assert body["tool_choice"] == "none"
    assert [t["name"] for t in body["tools"]] == ["records_search"]


async def test_tool_choice_any_requires_a_tool_and_keeps_search() -> None:
    server = openai_server(response(text("x")))
    await adapter(server).complete(request(choice=ToolChoice("any")))
    assert server.bodies[0]["tool_choice"] == "required"
    assert server.bodies[0]["tools"][-1]["type"] == "tool_search"


async def test_a_search_call_without_a_search_tool_is_refused() -> None:
    server = openai_server(response(search_call("s1", "weather")))
    with pytest.raises(ToolIdentityError, match="did not offer"):
        await adapter(server).complete(request(tools=(RECORDS,)))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"execution": "server"}, "execution 'server'"),
        ({"status": "in_progress"}, "status 'in_progress'"),
        ({"arguments": {"query": " "}}, "non-empty"),
        ({"arguments": {"paths": ["a"]}}, "non-empty"),
    ],
)
async def test_malformed_search_calls_are_refused(change: dict[str, Any], message: str) -> None:
    server = openai_server(response({**search_call("s1", "weather"), **change}))
    with pytest.raises(ModelError, match=message):
        await adapter(server).complete(request())


async def test_repeated_search_call_ids_are_refused() -> None:
    server = openai_server(
        response(search_call("s1", "weather"), search_call("s1", "alerts", item_id="tsc_2"))
    )
    with pytest.raises(ModelError, match="reuses tool search call ID 's1'"):
        await adapter(server).complete(request())


async def test_provider_names_are_sanitised_and_mapped_back() -> None:
    long_id = "analytics." + "x" * 80
    tools = (tool("crm-v2.find contact", "Find a contact."), tool(long_id, "Long one."))
    server = openai_server(response(function_call("c1", "crm-v2_find_contact")))
    reply = await adapter(server).complete(request(tools=tools))
    names = [t["name"] for t in server.bodies[0]["tools"]]
    assert names[0] == "crm-v2_find_contact"
    assert len(names[1]) == 64 and names[1].startswith("analytics_xxx")
    assert reply.message.tool_calls()[0].tool_id == "crm-v2.find contact"


async def test_colliding_provider_names_are_refused_before_sending() -> None:
    server = openai_server()
    tools = (tool("a.b_c", "One."), tool("a_b.c", "Two."))
    with pytest.raises(ProviderNameError, match=r"'a\.b_c' and 'a_b\.c'.*'a_b_c'"):
        await adapter(server).complete(request(tools=tools))
    assert server.bodies == []


@pytest.mark.parametrize("name", ["web", "image_gen", "browser", "python"])
async def test_deferred_tools_never_become_a_reserved_namespace(name: str) -> None:
    server = openai_server(response(text("ok")))
    with pytest.raises(ProviderNameError, match=f"'{name}'.*Bedrock reserves"):
        await adapter(server).complete(request(tools=(tool(name, "Reserved.", deferred=True),)))
    # Sent as a plain eager function it never becomes a namespace, so it is allowed.
    await adapter(server).complete(request(tools=(tool(name, "Reserved."),)))


async def test_output_items_it_does_not_offer_are_refused() -> None:
    web = {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "x"},
    }
    server = openai_server(response(web))
    with pytest.raises(ModelError, match="'web_search_call'"):
        await adapter(server).complete(request())


@pytest.mark.parametrize("status", ["failed", "cancelled", "in_progress"])
async def test_a_response_that_did_not_finish_is_an_error(status: str) -> None:
    reply = response(status=status)
    reply["error"] = {"code": "server_error", "message": "boom"} if status == "failed" else None
    server = openai_server(reply)
    with pytest.raises(ModelError, match=f"response 'resp_1' .* has status '{status}'"):
        await adapter(server).complete(request())


async def test_message_content_it_does_not_know_is_refused_not_dropped() -> None:
    reply = response(text("x"))  # validated before the content is changed
    reply["output"][0]["content"] = [{"type": "output_audio", "data": "AAAA", "transcript": "hi"}]
    # The SDK's default (lenient) parsing lets unknown content through to the adapter.
    client = openai_client(openai_server(reply), strict=False)
    with pytest.raises(ModelError, match="message 'msg_1' with content of type 'output_audio'"):
        await OpenAIResponsesModel(client).complete(request())


async def test_a_refusal_is_the_text_with_stop_reason_refusal() -> None:
    item = text("x")
    item["content"] = [{"type": "refusal", "refusal": "I cannot help with that."}]
    reply = await adapter(openai_server(response(item))).complete(request())
    assert reply.message.text == "I cannot help with that."
    assert reply.stop_reason == "refusal"


def refusal(value: str = "I cannot help with that.", item_id: str = "msg_1") -> dict[str, Any]:
    item = text("x", item_id)
    item["content"] = [{"type": "refusal", "refusal": value}]
    return item


REFUSED = (
    "was refused by the provider (a refusal content part in message 'msg_1': the model "
    "declined the request"
)


async def test_calls_next_to_a_refusal_are_not_run() -> None:
    # Before: the call was handed to the run (stop reason tool_use) and ran, though the model
    # refused in the same response; Claude's refusal and a filtered response were refused.
    server = openai_server(
        response(refusal(), function_call("c1", "records_search", '{"name": "A"}'))
    )
    with pytest.raises(ModelRefusalError) as caught:
        await adapter(server).complete(request(tools=(RECORDS,)))
    error = caught.value
    assert str(error).startswith(f"openai: response 'resp_1' of model 'gpt-5.4' {REFUSED}")
    assert "none of what it holds (1 tool call) is run" in str(error)
    assert isinstance(error, ModelError) and not error.transient
    assert error.usage == Usage(100, 20)


async def test_a_search_next_to_a_refusal_is_not_answered_after_earlier_rounds() -> None:
    server = openai_server(
        response(search_call("s1", "weather")),
        response(refusal(), search_call("s2", "alerts"), response_id="resp_2", output_tokens=30),
    )
    with pytest.raises(ModelRefusalError) as caught:
        await adapter(server).complete(request())
    assert f"response 'resp_2' of model 'gpt-5.4' {REFUSED}" in str(caught.value)
    assert "(1 tool search) is run" in str(caught.value)
    assert len(server.bodies) == 2 and caught.value.usage == Usage(200, 50)


async def test_a_filtered_response_with_calls_is_a_refusal_by_type() -> None:
    item = function_call("c1", "records_search", '{"name": "A"}')
    server = openai_server(response(item, status="incomplete", incomplete="content_filter"))
    with pytest.raises(ModelRefusalError, match="was filtered by the provider"):
        await adapter(server).complete(request(tools=(RECORDS,)))


async def test_an_empty_filtered_response_is_both_empty_and_a_refusal() -> None:
    server = openai_server(response(status="incomplete", incomplete="content_filter"))
    with pytest.raises(EmptyRefusalError) as caught:
        await adapter(server).complete(request(tools=(RECORDS,)))
    assert isinstance(caught.value, EmptyReplyError) and isinstance(caught.value, ModelRefusalError)


async def test_api_errors_name_provider_and_model() -> None:
    server = openai_server()  # no reply left: HTTP 500
    with pytest.raises(ModelError, match="openai: the request for model 'gpt-5.4' failed"):
        await adapter(server).complete(request())


async def test_text_and_instructions() -> None:
    server = openai_server(response(text("Bonjour")))
    reply = await adapter(server).complete(
        request(Message.system("Be brief."), Message.user("Hi"), system="You are helpful.")
    )
    body = server.bodies[0]
    assert body["instructions"] == "You are helpful."
    assert body["input"] == [
        {"type": "message", "role": "system", "content": "Be brief."},
        {"type": "message", "role": "user", "content": "Hi"},
    ]
    assert reply.message.parts == (TextPart("Bonjour"),)
    assert reply.stop_reason == "end_turn"


async def test_bedrock_is_detected_from_the_client_and_uses_the_bedrock_endpoint() -> None:
    server = openai_server(
        response(search_call("s1", "weather")),
        response(function_call("c1", "weather_lookup", namespace="weather_lookup")),
    )
    model = OpenAIResponsesModel(openai_client(server, bedrock=True))
    assert model.platform == "bedrock"
    reply = await model.complete(request(tools=(WEATHER, INVOICE)))
    exchange = server.exchanges[0]
    assert exchange.url == "https://bedrock-runtime.us-west-2.amazonaws.com/openai/v1/responses"
    assert exchange.headers["authorization"].startswith("AWS4-HMAC-SHA256")
    assert server.bodies[1]["input"][-1]["tools"][0]["type"] == "namespace"
    assert reply.message.tool_calls()[0].tool_id == "weather.lookup"


async def test_a_final_round_cut_by_the_output_limit_says_so() -> None:
    server = openai_server(
        response(text("Partial"), status="incomplete", incomplete="max_output_tokens")
    )
    reply = await adapter(server).complete(request())
    assert reply.stop_reason == "max_tokens" and reply.message.text == "Partial"


def test_bedrock_factory_uses_the_sdk_bedrock_provider() -> None:
    model = OpenAIResponsesModel.bedrock(
        region="eu-west-1", access_key_id="AKIDTEST", secret_access_key="secret"
    )
    assert model.platform == "bedrock"
    assert OpenAIResponsesModel(openai_client(openai_server()), platform="bedrock").platform == (
        "bedrock"
    )
    assert adapter(openai_server()).platform == "openai"


@pytest.mark.parametrize(
    ("host", "platform"),
    [
        ("bedrock-runtime.us-west-2.amazonaws.com", "bedrock"),
        ("bedrock-runtime-fips.us-east-1.amazonaws.com", "bedrock"),
        ("bedrock-runtime.cn-north-1.amazonaws.com.cn", "bedrock"),
        ("bedrock-mantle.us-east-1.api.aws", "bedrock"),
        ("vpce-0a1b2c-3d4e.bedrock-runtime.us-east-1.vpce.amazonaws.com", "bedrock"),
        ("BEDROCK-RUNTIME.us-west-2.amazonaws.com.", "bedrock"),
        ("api.openai.com", "openai"),
        ("bedrock-runtime.example", "openai"),
        ("my-bedrock-runtime.proxy.internal", "openai"),
        ("gateway.internal.bedrock-runtime.example.com", "openai"),
    ],
)
def test_bedrock_is_read_from_the_base_url_host(host: str, platform: str) -> None:
    client = AsyncOpenAI(api_key="sk-test", base_url=f"https://{host}/openai/v1", max_retries=0)
    assert OpenAIResponsesModel(client).platform == platform


# --- tool choice 'none', cut-short replies, budget floor, text ------------------------------


async def loaded_weather(server: Any) -> list[Message]:
    """A conversation whose search loaded weather_lookup (namespace) and called it once."""
    server.replies[:0] = [
        response(search_call("s1", "weather forecast"), output_tokens=30),
        response(function_call("c1", "weather_lookup", '{"city":"Paris"}', "weather_lookup")),
    ]
    asked = Message.user("Weather in Paris?")
    first = await adapter(server).complete(request(asked, tools=(WEATHER,)))
    result = Message("tool", (ToolResultPart("c1", "weather.lookup", '{"sky":"sunny"}'),))
    return [asked, first.message, result]


async def test_tool_choice_none_reaches_the_tools_a_replayed_search_loaded() -> None:
    server = openai_server(response(text("Sunny in Paris.")))
    history = await loaded_weather(server)
    # Every tool is deferred: a final-answer-only request has no top-level tool at all, but
    # the replayed search output still declares the loaded namespace.
    reply = await adapter(server).complete(
        request(*history, tools=(WEATHER,), choice=ToolChoice("none"))
    )
    body = server.bodies[-1]
    assert "tools" not in body
    [output] = [item for item in body["input"] if item["type"] == "tool_search_output"]
    assert [tool["name"] for tool in output["tools"]] == ["weather_lookup"]
    assert body["tool_choice"] == "none"
    assert reply.message.text == "Sunny in Paris."


async def test_a_call_made_despite_tool_choice_none_is_refused() -> None:
    server = openai_server(
        response(function_call("c2", "weather_lookup", '{"city":"Lyon"}', "weather_lookup"))
    )
    history = await loaded_weather(server)
    with pytest.raises(ToolIdentityError, match=r"'gpt-5\.4' called 'weather_lookup'.*'none'"):
        await adapter(server).complete(
            request(*history, tools=(WEATHER,), choice=ToolChoice("none"))
        )


async def test_nothing_callable_means_no_tool_choice() -> None:
    server = openai_server(response(text("hi")))
    await adapter(server).complete(request(tools=(), choice=ToolChoice("none")))
    assert "tool_choice" not in server.bodies[0] and "tools" not in server.bodies[0]


async def test_a_call_cut_off_by_the_output_limit_is_refused() -> None:
    item = function_call("c1", "records_search", '{"name": "Ali')
    item["status"] = "incomplete"
    server = openai_server(response(item, status="incomplete", incomplete="max_output_tokens"))
    with pytest.raises(OutputBudgetError) as caught:
        await adapter(server).complete(request(tools=(RECORDS,), max_tokens=50))
    message = str(caught.value)
    assert "cut off by the output limit while writing a call to 'records_search'" in message
    assert "raise max_tokens (this round could produce 50 tokens)" in message


async def test_a_search_call_cut_off_by_the_output_limit_is_a_budget_error() -> None:
    # Before: a plain ModelError from the search call's parser, unlike a cut function call.
    item = search_call("s1", "weather")
    item["status"] = "incomplete"
    server = openai_server(response(item, status="incomplete", incomplete="max_output_tokens"))
    with pytest.raises(OutputBudgetError) as caught:
        await adapter(server).complete(request(tools=(RECORDS, WEATHER), max_tokens=200))
    message = str(caught.value)
    assert "cut off by the output limit while writing tool search call 's1'" in message
    assert "raise max_tokens (this round could produce 200 tokens)" in message
    assert caught.value.usage == Usage(100, 20)


async def test_a_search_call_cut_short_for_another_reason_names_it() -> None:
    item = search_call("s1", "weather")
    item["status"] = "incomplete"
    server = openai_server(response(item, status="incomplete", incomplete="max_messages"))
    with pytest.raises(ModelError) as caught:
        await adapter(server).complete(request(tools=(RECORDS, WEATHER), max_tokens=200))
    assert not isinstance(caught.value, OutputBudgetError)
    assert "tool search call 's1' with status 'incomplete' (incomplete: 'max_messages')" in str(
        caught.value
    )


@pytest.mark.parametrize("output", [[reasoning()], []], ids=["reasoning-only", "empty"])
async def test_a_reply_without_a_call_or_text_is_refused_not_passed_as_an_answer(
    output: list[dict[str, Any]],
) -> None:
    # Before: parts=(), text '' and stop reason end_turn, taken as the final answer ''.
    server = openai_server(response(*output, output_tokens=1000))
    with pytest.raises(EmptyReplyError) as caught:
        await adapter(server).complete(request(tools=(RECORDS,)))
    message = str(caught.value)
    assert "response 'resp_1' of model 'gpt-5.4' holds no tool call and no text" in message
    assert "stop reason 'end_turn'" in message
    assert caught.value.usage == Usage(100, 1000)  # billed all the same


@pytest.mark.parametrize("phase", ["commentary", None])
async def test_a_last_round_without_a_call_or_text_is_refused_after_a_search(
    phase: str | None,
) -> None:
    # Before: the text said before the search passed for the answer of a round that gave none.
    server = openai_server(
        response(text("Let me find a tool.", "m1", phase), search_call("s1", "weather")),
        response(reasoning("rs_2"), response_id="resp_2", output_tokens=30),
    )
    with pytest.raises(EmptyReplyError) as caught:
        await adapter(server).complete(request())
    assert "response 'resp_2' of model 'gpt-5.4' holds no tool call and no text" in str(
        caught.value
    )
    assert caught.value.usage == Usage(200, 50)  # both rounds billed


async def test_a_reply_cut_before_any_text_says_to_raise_max_tokens() -> None:
    server = openai_server(
        response(reasoning(), status="incomplete", incomplete="max_output_tokens")
    )
    with pytest.raises(EmptyReplyError, match="reached before any text: raise max_tokens"):
        await adapter(server).complete(request(tools=(RECORDS,), max_tokens=64))


@pytest.mark.parametrize("max_tokens", [1, 15])
async def test_max_tokens_below_the_apis_minimum_is_refused_before_sending(
    max_tokens: int,
) -> None:
    # Before: sent as max_output_tokens and answered 400 integer_below_min_value by the API.
    server = openai_server(response(text("hi")))
    with pytest.raises(OutputBudgetError) as caught:
        await adapter(server).complete(request(tools=(RECORDS,), max_tokens=max_tokens))
    message = str(caught.value)
    assert f"sets max_tokens to {max_tokens}" in message
    assert "no max_output_tokens below 16" in message and "16 or more" in message
    assert server.bodies == []


async def test_max_tokens_at_the_apis_minimum_is_sent() -> None:
    server = openai_server(response(text("hi")))
    await adapter(server).complete(request(tools=(RECORDS,), max_tokens=16))
    assert server.bodies[0]["max_output_tokens"] == 16


async def test_a_call_cut_short_for_another_reason_names_it() -> None:
    item = function_call("c1", "records_search", '{"name": "Ali')
    item["status"] = "incomplete"
    server = openai_server(response(item, status="incomplete", incomplete="max_messages"))
    with pytest.raises(ModelError, match="status 'incomplete' \\(incomplete: 'max_messages'\\)"):
        await adapter(server).complete(request(tools=(RECORDS,)))


async def test_a_search_round_cut_for_another_reason_is_not_called_a_budget_problem() -> None:
    server = openai_server(
        response(search_call("s1", "weather"), status="incomplete", incomplete="max_messages")
    )
    with pytest.raises(ModelError) as caught:
        await adapter(server).complete(request())
    assert not isinstance(caught.value, OutputBudgetError)
    assert "incomplete: 'max_messages', not the output limit" in str(caught.value)
    assert "max_tokens" not in str(caught.value)


FILTERED = (
    "was filtered by the provider (incomplete_details.reason 'content_filter': the provider's "
    "content filter blocked it); none of what it holds"
)


@pytest.mark.parametrize("call_status", ["completed", "incomplete"])
async def test_calls_in_a_response_the_content_filter_cut_are_not_run(call_status: str) -> None:
    # Before: a completed call of a filtered response was handed to the run (and run).
    item = function_call("c1", "records_search", '{"name": "A"}')
    item["status"] = call_status
    server = openai_server(
        response(text("Looking", "m1"), item, status="incomplete", incomplete="content_filter")
    )
    with pytest.raises(ModelError) as caught:
        await adapter(server).complete(request(tools=(RECORDS,)))
    error = caught.value
    text_ = str(error)
    assert text_.startswith(f"openai: response 'resp_1' of model 'gpt-5.4' {FILTERED} (1 tool")
    assert "(1 tool call) is run" in text_ and "content policy" in text_
    assert not error.transient and not isinstance(error, OutputBudgetError)
    assert error.usage == Usage(100, 20)


async def test_searches_and_calls_of_a_filtered_round_are_not_run_after_earlier_rounds() -> None:
    # Before: the call ran (a search mixed with a call returns at once). Both rounds billed.
    server = openai_server(
        response(search_call("s1", "weather")),
        response(
            search_call("s2", "alerts"),
            function_call("c1", "weather_lookup", '{"city": "Paris"}', "weather_lookup"),
            status="incomplete",
            incomplete="content_filter",
            response_id="resp_2",
            output_tokens=30,
        ),
    )
    with pytest.raises(ModelError) as caught:
        await adapter(server).complete(request())
    text_ = str(caught.value)
    assert f"response 'resp_2' of model 'gpt-5.4' {FILTERED} (1 tool call and 1 tool search)" in (
        text_
    )
    assert caught.value.usage == Usage(200, 50)


async def test_a_filtered_response_without_calls_keeps_its_stop_reason() -> None:
    # Not an answer either: the planner refuses a final answer stopped by the content filter.
    server = openai_server(
        response(text("Partial"), status="incomplete", incomplete="content_filter")
    )
    reply = await adapter(server).complete(request(tools=(RECORDS,)))
    assert (reply.message.text, reply.stop_reason) == ("Partial", "content_filter")


async def test_a_round_is_never_given_less_than_the_apis_minimum_budget() -> None:
    server = openai_server(response(search_call("s1", "weather"), output_tokens=990))
    with pytest.raises(OutputBudgetError, match="all but 10 tokens of the output budget of 1000"):
        await adapter(server).complete(request(max_tokens=1000))
    # No second round was asked for with max_output_tokens=10 (the API refuses below 16).
    assert len(server.bodies) == 1


async def test_a_reply_with_a_lone_surrogate_is_refused_by_name() -> None:
    # Valid JSON (an escaped lone surrogate, half of an emoji) that UTF-8 cannot carry back.
    raw = json.dumps(response(search_call("s1", "weather"))).replace(
        '"weather"', '"weather \\ud83d"'
    )
    bodies: list[bytes] = []

    def handler(sent: httpx2.Request) -> httpx2.Response:
        bodies.append(sent.content)
        headers = {"content-type": "application/json"}
        return httpx2.Response(200, content=raw.encode(), headers=headers)

    client = AsyncOpenAI(
        api_key="sk-test",
        base_url="http://stub.local/v1",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    with pytest.raises(ModelError) as caught:
        await OpenAIResponsesModel(client).complete(request())
    message = str(caught.value)
    assert "response 'resp_1' of model 'gpt-5.4': output[0]" in message
    assert "$.arguments.query" in message and "lone UTF-16 surrogate" in message
    # Broken output, not a broken request: sampling again usually gives a well-formed reply.
    assert caught.value.transient and "later attempt may pass" in message
    assert len(bodies) == 1


async def test_phase_is_kept_and_commentary_is_not_the_answer() -> None:
    server = openai_server(
        response(text("Let me find a tool.", "m1", "commentary"), search_call("s1", "weather")),
        response(text('{"city": "Paris"}', "m2", "final_answer")),
        response(text("ok")),
    )
    model = adapter(server)
    reply = await model.complete(request())
    # The next round gets the commentary back as received: with its phase, as the API asks.
    assert server.bodies[1]["input"][1] == text("Let me find a tool.", "m1", "commentary")
    assert [part.phase for part in reply.message.parts if isinstance(part, TextPart)] == [
        "commentary",
        "final_answer",
    ]
    assert reply.message.text == '{"city": "Paris"}'
    # Stored and replayed: the phases go back too.
    history = [Message.from_json(json.loads(json.dumps(m.to_json()))) for m in (reply.message,)]
    await model.complete(request(Message.user("Weather?"), *history, Message.user("Thanks")))
    assistant = [item for item in server.bodies[-1]["input"] if item.get("role") == "assistant"]
    assert [item.get("phase") for item in assistant] == ["commentary", "final_answer"]


async def test_a_search_round_sends_back_the_item_its_reasoning_item_preceded() -> None:
    # Before: the message was re-encoded without its ID, and the API pairs a reasoning item
    # with the item that followed it by ID ("Item 'rs_1' of type 'reasoning' was provided
    # without its required following item").
    server = openai_server(
        response(
            reasoning("rs_1"),
            text("Let me find a tool.", "m1", "commentary"),
            reasoning("rs_2"),
            search_call("s1", "weather", "tsc_1"),
        ),
        response(text("Sunny.", "m2", "final_answer")),
    )
    await adapter(server).complete(request())
    assert [(item["type"], item.get("id")) for item in server.bodies[1]["input"][1:5]] == [
        ("reasoning", "rs_1"),
        ("message", "m1"),
        ("reasoning", "rs_2"),
        ("tool_search_call", "tsc_1"),
    ]


async def test_a_phase_it_does_not_know_is_refused_not_dropped() -> None:
    reply = response(text("x"))
    reply["output"][0]["phase"] = "aside"
    client = openai_client(openai_server(reply), strict=False)
    with pytest.raises(ModelError, match="message 'msg_1' with phase 'aside'"):
        await OpenAIResponsesModel(client).complete(request())
