"""Within a run, a tool-call ID names one call: a repeated ID is refused, never executed or
answered with another call's result (SPEC L5)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentgen.runtime.app import Runtime
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.runs.requests import ToolCallIdError
from tests.runtime.agents import ScriptedPlanner, answer, register
from tests.runtime.fake_registry import FakeRegistry
from tests.runtime.test_saved_contracts import payments, setup


def turn(*calls: tuple[str, str, dict[str, Any]]) -> Message:
    return Message(
        "assistant",
        tuple(ToolCallPart(call_id, tool, json.dumps(args)) for call_id, tool, args in calls),
    )


async def paid_handler(tool: str, payload: Any, meta: Any) -> Any:
    return {"paid": payload["amount"]}


async def test_an_id_repeated_in_one_turn_is_refused_and_nothing_runs() -> None:
    registry = FakeRegistry()
    registry.publish(payments(), paid_handler)
    planner = ScriptedPlanner(
        [
            turn(
                ("same", "payments.list", {"amount": 1}),
                ("same", "payments.list", {"amount": 1000}),
            ),
            answer(),
        ]
    )
    rt = setup(registry, planner, [])
    with pytest.raises(ToolCallIdError, match="'same'") as info:
        await rt.client("test.payer").run("go", labels={"tenant": "t"})
    assert "test.payer" in str(info.value)
    assert registry.calls == []


async def test_an_id_reused_in_a_later_turn_is_refused_and_not_answered_again() -> None:
    registry = FakeRegistry()
    registry.publish(payments(), paid_handler)
    planner = ScriptedPlanner(
        [
            turn(("same", "payments.list", {"amount": 1})),
            turn(("same", "payments.list", {"amount": 1000})),
            answer(),
        ]
    )
    rt = setup(registry, planner, [])
    with pytest.raises(ToolCallIdError, match="'same'"):
        await rt.client("test.payer").run("go", labels={"tenant": "t"})
    # The first call ran; the second was neither run nor given the first one's result.
    assert [json.loads(payload) for _, payload, _ in registry.calls] == [{"amount": 1}]


async def test_an_id_from_the_conversation_history_cannot_be_reused() -> None:
    history = [
        Message.user("earlier"),
        turn(("old", "records.lookup", {"id": "1"})),
        Message("tool", (ToolResultPart("old", "records.lookup", "{}"),)),
        Message("assistant", (TextPart("done"),)),
        Message.user("again"),
    ]
    rt = Runtime()
    executor = register(
        rt, ScriptedPlanner([turn(("old", "records.lookup", {"id": "2"})), answer()])
    )
    with pytest.raises(ToolCallIdError, match="'old'"):
        await rt.client("test.agent").run(history)
    assert executor.calls == []


async def test_empty_ids_are_refused() -> None:
    rt = Runtime()
    executor = register(rt, ScriptedPlanner([turn(("", "records.lookup", {"id": "1"})), answer()]))
    with pytest.raises(ToolCallIdError, match="empty"):
        await rt.client("test.agent").run("go")
    assert executor.calls == []


@pytest.mark.parametrize(
    ("call_id", "shown"),
    [
        ("c1\nrun r: tool records.lookup (call c2) ok", "'c1\\nrun r: tool"),
        ("c1\x1b[2K", "'c1\\x1b[2K'"),
        ("c1\u202e", "'c1\\u202e'"),
        ("c" * 257, "'" + "c" * 80 + "...'"),
    ],
    ids=["newline", "escape", "bidi", "too-long"],
)
async def test_ids_that_are_not_one_short_visible_line_are_refused(
    call_id: str, shown: str
) -> None:
    # Models choose call IDs, and they reach logs: a newline in one would forge a log line.
    rt = Runtime()
    planner = ScriptedPlanner([turn((call_id, "records.lookup", {"id": "1"})), answer()])
    executor = register(rt, planner)
    with pytest.raises(ToolCallIdError) as info:
        await rt.client("test.agent").run("go")
    message = str(info.value)
    assert shown in message and "at most 256 characters" in message, message
    assert "\n" not in message and "\x1b" not in message
    assert executor.calls == []


async def test_distinct_ids_across_turns_run_normally() -> None:
    rt = Runtime()
    planner = ScriptedPlanner(
        [
            turn(("a", "records.lookup", {"id": "1"}), ("b", "records.lookup", {"id": "2"})),
            turn(("c", "records.lookup", {"id": "3"})),
            answer(),
        ]
    )
    executor = register(rt, planner)
    outcome = await rt.client("test.agent").run("go")
    assert outcome.tool_calls == 3 and len(executor.calls) == 3


@pytest.mark.parametrize(
    ("tool_id", "shown"),
    [
        ("x" * 200_000, "'" + "x" * 80 + "...'"),
        ("records.lookup\nrun r: ok", "'records.lookup\\nrun r: ok'"),
    ],
    ids=["200-KB", "newline"],
)
async def test_calls_to_tools_named_past_one_short_visible_line_are_refused(
    tool_id: str, shown: str
) -> None:
    # No tool ID is; refused as an unknown tool, a made-up 200 KB name came back to the model
    # twice in its not_permitted error (a 400 KB tool result).
    rt = Runtime()
    planner = ScriptedPlanner(
        [turn(("c1", "records.lookup", {"id": "1"}), ("c2", tool_id, {})), answer()]
    )
    executor = register(rt, planner)
    with pytest.raises(ToolCallIdError) as info:
        await rt.client("test.agent").run("go")
    message = str(info.value)
    assert f"(call ID 'c2') to a tool named {shown}" in message, message
    assert "at most 256 characters" in message and len(message) < 500
    assert "\n" not in message
    assert executor.calls == []
    assert len(planner.inputs) == 1  # the model never read a result of that turn
