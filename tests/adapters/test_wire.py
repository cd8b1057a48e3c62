"""The request checks the other tests rely on do catch what they claim to catch."""

from __future__ import annotations

from typing import Any

from tests.adapters.fakes import check_anthropic, check_openai

FUNCTION = {
    "type": "function",
    "name": "weather_lookup",
    "description": "Weather.",
    "parameters": {"type": "object", "properties": {}},
    "strict": False,
}


def openai_body(**extra: Any) -> dict[str, Any]:
    return {"model": "gpt-5.4", "input": [], **extra}


def test_a_conforming_openai_body_passes() -> None:
    assert check_openai("", {}, openai_body(tools=[FUNCTION], max_output_tokens=10)) == []


def test_unknown_keys_are_found_at_any_depth() -> None:
    namespace = {
        "type": "namespace",
        "name": "weather_lookup",
        "description": "Weather.",
        "tools": [{**FUNCTION, "defer_loading": True, "invented": 1}],
    }
    output = {
        "type": "tool_search_output",
        "call_id": "s1",
        "execution": "client",
        "status": "completed",
        "tools": [namespace],
    }
    problems = check_openai("", {}, openai_body(input=[output]))
    assert any("tools[0].tools[0].invented" in problem for problem in problems)
    assert check_openai("", {}, openai_body(tools=[{**FUNCTION, "extra": True}]))
    assert check_openai("", {}, openai_body(surprise=1))


def test_missing_required_keys_and_wrong_literals_are_found() -> None:
    no_strict = {key: value for key, value in FUNCTION.items() if key != "strict"}
    assert check_openai("", {}, openai_body(tools=[no_strict]))
    search = {"type": "tool_search", "execution": "clientx"}
    assert check_openai("", {}, openai_body(tools=[search]))
    namespace = {"type": "namespace", "name": "n", "tools": []}
    assert check_openai("", {}, openai_body(tools=[namespace]))


def test_anthropic_bodies_are_checked_with_the_types_of_the_endpoint_used() -> None:
    removal = {
        "role": "system",
        "content": [{"type": "tool_removal", "tool": {"type": "tool_reference", "name": "x"}}],
    }
    body = {"model": "m", "max_tokens": 5, "messages": [removal]}
    beta = {"anthropic-beta": "mid-conversation-tool-changes-2026-07-01"}
    assert check_anthropic("http://stub.local/v1/messages", beta, body) == []
    # Without the beta the GA types apply, and they have no tool changes.
    assert check_anthropic("http://stub.local/v1/messages", {}, body)
    search = {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_bm25"}
    assert check_anthropic("http://x/v1/messages", {}, {**body, "messages": [], "tools": [search]})


def test_bedrock_bodies_must_not_carry_the_model() -> None:
    url = "https://bedrock-runtime.us-west-2.amazonaws.com/model/m/invoke"
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 5, "messages": []}
    assert check_anthropic(url, {}, body) == []
    assert check_anthropic(url, {}, {**body, "model": "m"})
