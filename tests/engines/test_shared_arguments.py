"""A planning answer carries its calls' arguments once when they are large.

``Planned`` held a call's arguments three times (the reply's tool call part, the decision's
call, the accepted call's checkpoint), so a call with about 700 KB of arguments made the
planning answer exceed Temporal's 2 MiB payload limit and failed the run. Large arguments are
now written once (decisions refer to the reply's parts); small ones as the release before wrote
them; histories recorded before replay.
"""

from __future__ import annotations

import asyncio
import base64
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentgen.runtime.engines.temporal import replay
from agentgen.runtime.engines.temporal.converter import _payload, decode, encode
from agentgen.runtime.engines.temporal.shared_arguments import SHARED_FROM, unshare
from agentgen.runtime.messages import Message, TextPart, ToolCallPart
from agentgen.runtime.runs.steps import Decision, Planned
from tests.engines.conftest import Harness
from tests.engines.record_histories import LARGE_QUERY
from tests.runtime.agents import ScriptedPlanner, answer, calls, register

RECORDED = Path(__file__).parent / "histories" / "large-arguments" / "7f7eaa3-run.json"
#: The same run recorded by code that writes the arguments once (since e3c7f70).
RECORDED_SHARED = Path(__file__).parent / "histories" / "large-arguments" / "e3c7f70-run.json"


def _planned(arguments: str, *, refused_too: bool = False) -> Planned[Any]:
    call = ToolCallPart("c1", "records.search", arguments)
    checkpoint = {
        "call": {"call_id": "c1", "tool_id": "records.search", "arguments": arguments},
        "tool": "records.search",
        "toolset": "records",
    }
    parts: tuple[Any, ...] = (TextPart("calling"), call)
    decisions: tuple[Decision[Any], ...] = (Decision(call, accepted=checkpoint),)
    if refused_too:
        other = ToolCallPart("c2", "nope.tool", '{"x": 1}')
        parts += (other,)
        decisions += (Decision(other, refused=None),)
    return Planned(Message("assistant", parts), decisions=decisions)


def _size(planned: Planned[Any]) -> int:
    payload = _payload(planned)
    assert payload is not None
    return len(payload.data)


def test_a_large_argument_is_written_once_and_read_back_whole() -> None:
    big = json.dumps({"query": "x" * 700_000})
    planned = _planned(big, refused_too=True)
    # Three copies (2,100,504 bytes before) were over the 2 MiB limit; one is not.
    assert len(big) < _size(planned) < len(big) + 1_000
    written = encode(planned, Planned)
    assert [sorted(d) for d in written["decisions"]] == [["accepted", "part", "refused"]] * 2
    assert [d["part"] for d in written["decisions"]] == [1, 2]
    assert "call" not in written["decisions"][0]["accepted"]["json"]
    assert decode(json.loads(json.dumps(written)), Planned) == planned


def test_small_arguments_are_written_as_the_release_before_wrote_them() -> None:
    small = json.dumps({"query": "x" * (SHARED_FROM // 2)})
    written = encode(_planned(small), Planned)
    (decision,) = written["decisions"]
    assert sorted(decision) == ["accepted", "call", "refused"]
    assert decision["accepted"]["json"]["call"]["arguments"] == small
    assert _size(_planned(small)) > 3 * len(small)


def test_a_checkpoint_with_exact_numbers_is_shared_and_keeps_them() -> None:
    big = json.dumps({"query": "x" * SHARED_FROM})
    planned = _planned(big)
    checkpoint = {**planned.decisions[0].accepted, "binding": {"minimum": Decimal("0.10")}}
    planned = Planned(planned.message, decisions=(Decision(planned.decisions[0].call, checkpoint),))
    written = encode(planned, Planned)
    assert "exact" in written["decisions"][0]["accepted"] and "part" in written["decisions"][0]
    back = decode(json.loads(json.dumps(written)), Planned)
    assert back == planned
    assert str(back.decisions[0].accepted["binding"]["minimum"]) == "0.10"


def test_a_call_that_is_not_in_the_reply_is_written_whole() -> None:
    big = json.dumps({"query": "x" * SHARED_FROM})
    planned = _planned(big)
    elsewhere = ToolCallPart("c9", "records.search", big)
    odd = Planned(planned.message, decisions=(Decision(elsewhere, refused=None),))
    (decision,) = encode(odd, Planned)["decisions"]
    assert "call" in decision and "part" not in decision
    assert decode(encode(odd, Planned), Planned) == odd


def test_a_decision_referring_to_a_part_that_is_no_call_is_refused() -> None:
    written = encode(_planned(json.dumps({"query": "x" * SHARED_FROM})), Planned)
    for wrong in (0, 5, "1", -1):
        written["decisions"][0]["part"] = wrong
        with pytest.raises(ValueError, match=f"decision 0 refers to part {wrong!r} of the reply"):
            unshare(written)


def _recorded_planned(recorded: Path = RECORDED) -> bytes:
    """The planning answer with calls in a recorded history, as its worker wrote it."""
    history = json.loads(recorded.read_text())
    for event in history["events"]:
        completed = event.get("activityTaskCompletedEventAttributes")
        for payload in (completed or {}).get("result", {}).get("payloads", []):
            if base64.b64decode(payload["metadata"]["type"]) == b"agentgen.Planned":
                data = base64.b64decode(payload["data"])
                if b'"decisions":[]' not in data:
                    return data
    raise AssertionError("the recorded history holds no planning answer with calls")


def test_an_answer_recorded_before_reads_as_it_did_and_is_written_shared() -> None:
    data = _recorded_planned()
    planned = decode(json.loads(data), Planned)
    assert json.loads(planned.decisions[0].call.arguments) == {"query": LARGE_QUERY}
    assert planned.decisions[0].accepted["call"]["arguments"] == planned.decisions[0].call.arguments
    again = json.dumps(encode(planned, Planned), ensure_ascii=False, separators=(",", ":"))
    assert len(again) < len(data) / 2
    assert decode(json.loads(again), Planned) == planned


@pytest.mark.asyncio(loop_scope="session")
async def test_a_history_recorded_before_the_change_replays() -> None:
    """Recorded by ``record_histories --large-arguments`` on the commit before (7f7eaa3), with
    its arguments written three times: today's workflow code reads them and takes the same
    path (the replayer decodes every recorded answer)."""
    text = RECORDED.read_text()
    assert text.count("EVENT_TYPE_ACTIVITY_TASK_COMPLETED") >= 3
    await replay([text])


@pytest.mark.asyncio(loop_scope="session")
async def test_a_durable_run_with_an_argument_of_900_kb_finishes(durable: Harness) -> None:
    """The planning answer used to carry it three times (2.7 MB, over the 2 MiB limit): the
    run failed with ``PayloadTooLargeError``. The final result still carries it twice (the
    transcript and the accepted call's checkpoint), which bounds a whole run's arguments."""
    query = "q" * 900_000
    rt = durable.runtime()
    records = register(rt, ScriptedPlanner([calls(("records.search", {"query": query})), answer()]))
    async with durable.serving(rt):
        outcome = await asyncio.wait_for(rt.client("test.agent").run("go"), 60)
    assert outcome.final_text == "done"
    ((tool, args, _),) = records.calls
    assert tool == "search" and args.query == query


@pytest.mark.asyncio(loop_scope="session")
async def test_a_history_recorded_with_shared_arguments_replays() -> None:
    """Recorded by ``record_histories --large-arguments`` with the arguments written once: the
    form later releases must keep reading (the replayer decodes every recorded answer)."""
    data = json.loads(_recorded_planned(RECORDED_SHARED))
    assert [sorted(d) for d in data["decisions"]] == [["accepted", "part", "refused"]] * 2
    planned = decode(data, Planned)
    assert json.loads(planned.decisions[0].call.arguments) == {"query": LARGE_QUERY}
    await replay([RECORDED_SHARED.read_text()])
