"""What a codec refuses reaches the model as a bounded tool error naming the place at fault.

- Issues: at most ``MAX_ISSUES`` listed (then how many more), within ``MAX_ISSUES_CHARS`` in
  all: 100,000 wrong items (300 KB of arguments) made a 7 MB tool error (20,000 here).
- Nesting: a registry result nested 800 deep raised ``RecursionError`` (the model read an
  ``internal_error``); values are held to ``MAX_VALUE_DEPTH`` before validation.
- Lone surrogates in arguments: a registry tool validated them, a person confirmed the call,
  and the registry client then could not send it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentgen.runtime.contracts import limits
from agentgen.runtime.contracts.codecs import (
    FieldIssue,
    ModelCodec,
    PayloadError,
    SchemaCodec,
    encode_exact,
    parse_arguments,
)
from agentgen.runtime.messages import Message, ToolCallPart
from agentgen.runtime.runs.confirmation import ConfirmationRequest
from agentgen.runtime.runs.results import tool_error
from examples.records.gen.assistant.toolsets.records import specs, types
from tests.runtime.agents import ScriptedPlanner, answer, calls
from tests.runtime.fake_registry import FakeRegistry
from tests.runtime.test_saved_contracts import payments, setup


def error_of(part: Any) -> dict[str, Any]:
    assert part.is_error, part
    error: dict[str, Any] = json.loads(part.content)["error"]
    return error


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


# --------------------------------------------------------------------------- issue lists

ANALYZE = next(spec for spec in specs.SPECS if spec.id == "records.analyze")


@pytest.mark.parametrize("kind", ["compiled", "registry"])
def test_twenty_thousand_wrong_items_make_a_short_tool_error(kind: str) -> None:
    arguments = json.dumps({"ids": [1] * 20_000})
    codec = (
        ANALYZE.payload.codec
        if kind == "compiled"
        else SchemaCodec(json.loads(ANALYZE.payload.schema_json), "arguments of records.analyze")
    )
    with pytest.raises(PayloadError) as raised:
        codec.decode_arguments(parse_arguments(arguments, "arguments of records.analyze"))
    issues = raised.value.issues
    assert len(issues) == limits.MAX_ISSUES + 1
    assert issues[0].path == "ids[0]"
    assert issues[-1] == FieldIssue(
        "",
        f"and {20_000 - limits.MAX_ISSUES} more issues (only the first {limits.MAX_ISSUES} "
        "are listed): fix these, and any like them, before calling again",
    )
    call = ToolCallPart("c1", "records.analyze", arguments)
    part = tool_error(call, "invalid_arguments", "arguments are invalid", issues)
    assert len(part.content) < 8 * 1024  # 1.4 MB (compiled) and 1.3 MB (registry) before


def test_long_issues_are_held_to_the_total_size() -> None:
    many = [FieldIssue(f"f{i}", "x" * 5000) for i in range(10)]
    issues = PayloadError("value", many).issues
    kept = issues[:-1]
    assert all(len(issue.message) <= limits.MAX_ISSUE_CHARS + 40 for issue in kept)
    assert sum(len(i.path) + len(i.message) for i in kept) <= limits.MAX_ISSUES_CHARS
    assert issues[-1].message.startswith(f"and {10 - len(kept)} more issues")


def test_a_single_long_issue_is_kept_cut() -> None:
    (issue,) = PayloadError("value", [FieldIssue("p" * 50_000, "m" * 50_000)]).issues
    assert issue.path.startswith("ppp") and issue.message.startswith("mmm")
    assert len(issue.path) + len(issue.message) < 2 * limits.MAX_ISSUE_CHARS + 100


def test_few_issues_are_all_listed() -> None:
    issues = [FieldIssue(f"f{i}", "wrong") for i in range(limits.MAX_ISSUES)]
    assert PayloadError("value", issues).issues == tuple(issues)


# --------------------------------------------------------------------------- nesting


@pytest.mark.parametrize("depth", [limits.MAX_VALUE_DEPTH, 800])
def test_results_nested_too_deeply_are_refused(depth: int) -> None:
    codec = SchemaCodec({"type": "object"}, "payments.list result")
    text = '{"rows": ' + "[" * depth + "]" * depth + "}"
    with pytest.raises(PayloadError, match=f"nested deeper than {limits.MAX_VALUE_DEPTH} levels"):
        codec.decode(text)


def test_results_within_the_depth_limit_are_validated() -> None:
    codec = SchemaCodec({"type": "object"}, "payments.list result")
    value = {"rows": nested(limits.MAX_VALUE_DEPTH - 2)}
    assert codec.decode(json.dumps(value)) == value


async def test_a_deep_registry_result_is_an_invalid_result() -> None:
    async def deep(tool: str, payload: Any, meta: Any) -> Any:
        return {"rows": nested(800)}

    registry = FakeRegistry()
    registry.publish(payments(), deep)
    planner = ScriptedPlanner([calls(("payments.list", {"amount": 1})), answer()])
    outcome = (
        await setup(registry, planner, []).client("test.payer").run("go", labels={"tenant": "t"})
    )
    error = error_of(outcome.transcript[2].parts[0])
    assert error["kind"] == "invalid_result"  # was internal_error: RecursionError
    assert "nested deeper than" in error["issues"][0]["message"]


def test_writing_a_value_too_deep_for_json_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="nested too deeply to write as JSON"):
        encode_exact(nested(5000))


def test_a_parsed_value_too_deep_to_write_is_an_invalid_payload() -> None:
    with pytest.raises(PayloadError, match="nested too deeply"):
        ModelCodec(types.Record, "result").decode({"id": nested(5000)})


# --------------------------------------------------------------------------- lone surrogates

SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer"}, "note": {"type": "string"}},
    "required": ["amount"],
}


@pytest.mark.parametrize(
    ("arguments", "where", "code"),
    [
        ('{"amount": 5, "note": "x\\ud800"}', "/note", "U+D800"),
        ('{"amount": 5, "tags": ["ok", "\\uDFFF!"]}', "/tags/1", "U+DFFF"),
        ('{"amount": 5, "\\udc00": 1}', "/\\udc00", "U+DC00"),
        ('{"amount": 5, "note": "x\ud800"}', "/note", "U+D800"),  # the character itself
        (b'{"amount": 5, "note": "\\ud9ff"}', "/note", "U+D9FF"),
    ],
)
def test_arguments_holding_a_lone_surrogate_are_refused_naming_it(
    arguments: str | bytes, where: str, code: str
) -> None:
    with pytest.raises(PayloadError) as raised:
        parse_arguments(arguments, "arguments of payments.pay")
    (issue,) = raised.value.issues
    assert f"contains a lone surrogate ({code}) at {where}," in issue.message
    issue.message.encode("utf-8")  # the issue itself can be sent


@pytest.mark.parametrize(
    "arguments",
    [
        '{"note": "\\ud83d\\ude00 pair"}',
        '{"note": "\U0001f600"}',
        '{"note": "a backslash then ud800: \\\\ud800"}',
    ],
)
def test_whole_characters_and_escaped_backslashes_are_taken(arguments: str) -> None:
    assert parse_arguments(arguments, "arguments") == json.loads(arguments)


async def test_a_registry_call_with_a_lone_surrogate_is_refused_before_confirmation() -> None:
    registry = FakeRegistry()

    async def echo(tool: str, payload: Any, meta: Any) -> Any:
        return payload

    registry.publish(payments(payload=SCHEMA), echo)
    asked: list[ConfirmationRequest] = []
    arguments = '{"amount": 5, "note": "x\\ud800"}'
    planner = ScriptedPlanner(
        [Message("assistant", (ToolCallPart("c1", "payments.pay", arguments),)), answer()]
    )
    outcome = (
        await setup(registry, planner, asked).client("test.payer").run("go", labels={"tenant": "t"})
    )
    error = error_of(outcome.transcript[2].parts[0])
    assert error["kind"] == "invalid_arguments"  # was registry_error, after the confirmation
    assert "/note" in error["issues"][0]["message"]
    assert asked == [] and registry.calls == []
