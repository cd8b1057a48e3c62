"""Workers of the release before read the payloads of runs that do not use what is new.

A reader refuses fields it does not know (``RunPolicy has no fields ['model_timeout']``), and a
workflow task that cannot read its input is retried until a newer worker takes it. So fields
added to a wire value (``metadata=ADDED``: the model-call change's ``RunPolicy.model_timeout``,
``Planned``/``RunState``/``RunResult.usage``, ``Usage.unreported``) are left out of a payload
while they hold their default: the payloads of a run that uses nothing new are those the
release before wrote, byte for byte (``PREVIOUS_RELEASE``: written by commit 6b34c22), and the
recorded histories of release 0.1.0 are written again as they are, but for the fields added
between 0.1.0 and the rule, which every release since writes.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentgen.runtime.agents.definition import RunPolicy
from agentgen.runtime.agents.planning import RunContext
from agentgen.runtime.engines.temporal.converter import TYPES, decode, encode
from agentgen.runtime.engines.temporal.wire import RunInput
from agentgen.runtime.messages import Message, TextPart
from agentgen.runtime.model_client import Usage
from agentgen.runtime.runs.loop import RunResult, RunState
from agentgen.runtime.runs.requests import RunRequest
from agentgen.runtime.runs.steps import Planned, PlanTask
from agentgen.runtime.wire_fields import is_added

HISTORIES = sorted((Path(__file__).parent / "histories").glob("0.1.0-*.json"))


def _payloads(node: Any) -> Iterator[tuple[str, bytes]]:
    """Every agentgen payload of a history in JSON: its type name and its bytes."""
    if isinstance(node, dict):
        metadata: Any = node.get("metadata")
        ours = isinstance(metadata, dict) and "data" in node
        if ours and base64.b64decode(metadata.get("encoding", "")) == b"json/agentgen":
            yield base64.b64decode(metadata["type"]).decode(), base64.b64decode(node["data"])
        for value in node.values():
            yield from _payloads(value)
    elif isinstance(node, list):
        for value in node:
            yield from _payloads(value)


def _written(value: Any, cls: type) -> bytes:
    return _json(encode(value, cls))


def _json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


#: Fields added between release 0.1.0 and the rule, written always since.
_BEFORE_THE_RULE = {
    "execution_deadline_ms",
    "result_expires_at_ms",
    "activity",
    "max_payload_bytes",
}


def _without(data: Any, names: set[str]) -> Any:
    if isinstance(data, dict):
        return {k: _without(v, names) for k, v in data.items() if k not in names}
    if isinstance(data, list):
        return [_without(v, names) for v in data]
    return data


@pytest.mark.parametrize("history", HISTORIES, ids=lambda p: p.name)
def test_the_payloads_of_release_0_1_0_are_written_again_as_they_were(history: Path) -> None:
    payloads = list(_payloads(json.loads(history.read_text())))
    names = {name for name, _ in payloads}
    assert len(payloads) > 3
    if history.name.endswith("-run.json"):
        # Every value that gained a field and crosses a run's history is among them.
        assert {"agentgen.PlanTask", "agentgen.Planned", "agentgen.RunInput"} <= names
        assert {"agentgen.RunResult", "agentgen.Prepared"} <= names
    for name, data in payloads:
        cls = TYPES[name]
        again = _without(encode(decode(json.loads(data), cls), cls), _BEFORE_THE_RULE)
        assert _json(again) == data, name


#: What the release before wrote (commit 6b34c22, ``git archive 6b34c22``) for each value that
#: has gained a field since, holding nothing new; see :func:`_values`.
PREVIOUS_RELEASE = {
    "RunInput": (
        '{"request":{"agent_id":"a","messages":[{"role":"user","parts":[{"text":"go","kin'
        'd":"text"}],"metadata":{}}],"labels":{},"policy":{"max_tool_calls":null,"max_con'
        'secutive_failed_tool_calls":null,"tag_clauses":[],"restrict_to_tool":null},"run_'
        'id":"r1","parent_run_id":null,"parent_tool_call_id":null,"result_schema_json":nu'
        'll},"state":null,"settings":{"planning_timeout":600.0,"tool_timeout":3600.0,"ste'
        'p_timeout":60.0,"heartbeat_timeout":30.0,"retry_initial_interval":1.0,"retry_bac'
        'koff":2.0,"retry_maximum_interval":60.0,"retry_maximum_attempts":5,"continue_as_'
        'new_after_events":10000,"max_payload_bytes":2097152},"confirmable":false}'
    ),
    "PlanTask": (
        '{"run":{"run_id":"r1","agent_id":"a","labels":{},"parent_run_id":null,"result_sc'
        'hema_json":null},"policy":{"max_tool_calls":3,"max_consecutive_failed_tool_calls'
        '":null,"tag_clauses":[],"restrict_to_tool":null},"messages":[{"role":"user","par'
        'ts":[{"text":"go","kind":"text"}],"metadata":{}}],"start":true,"finalize":false,'
        '"tool_results":[],"calls_made":0,"activity":1}'
    ),
    "Planned": (
        '{"message":{"role":"assistant","parts":[{"text":"done","kind":"text"}],"metadata'
        '":{}},"final_value":null,"decisions":[],"limits":{"max_tool_calls":null,"max_con'
        'secutive_failed_tool_calls":null}}'
    ),
    "RunState": (
        '{"run":{"run_id":"r1","agent_id":"a","labels":{},"parent_run_id":null,"result_sc'
        'hema_json":null},"policy":{"max_tool_calls":null,"max_consecutive_failed_tool_ca'
        'lls":null,"tag_clauses":[],"restrict_to_tool":null},"transcript":[{"role":"user"'
        ',"parts":[{"text":"go","kind":"text"}],"metadata":{}}],"started":false,"finalize'
        '":false,"tool_results":[],"calls":0,"consecutive_failures":0,"limits":{"max_tool'
        '_calls":null,"max_consecutive_failed_tool_calls":null},"call_ids":{},"accepted":'
        '[],"accepted_ids":[],"children":{},"activities":2}'
    ),
    "RunResult": (
        '{"run_id":"r1","agent_id":"a","transcript":[{"role":"user","parts":[{"text":"go"'
        ',"kind":"text"}],"metadata":{}}],"final_text":"done","final_value":null,"tool_ca'
        'lls":0,"child_runs":[],"parent_run_id":null,"accepted":[]}'
    ),
}


def _values() -> dict[str, Any]:
    run = RunContext("r1", "a")
    request = RunRequest("a", (Message.user("go"),), run_id="r1")
    policy = RunPolicy(max_tool_calls=3)
    return {
        "RunInput": RunInput(request=request),
        "PlanTask": PlanTask(run, policy, (Message.user("go"),), activity=1),
        "Planned": Planned[Any](Message("assistant", (TextPart("done"),))),
        "RunState": RunState[Any](run, RunPolicy(), [Message.user("go")], activities=2),
        "RunResult": RunResult[Any]("r1", "a", (Message.user("go"),), "done"),
    }


def test_values_that_use_nothing_new_are_written_as_the_release_before_wrote_them() -> None:
    values = _values()
    assert set(values) == set(PREVIOUS_RELEASE)
    for name, value in values.items():
        assert _written(value, type(value)).decode() == "".join(PREVIOUS_RELEASE[name]), name


def test_new_fields_are_written_when_they_hold_something() -> None:
    done = Message("assistant", (TextPart("done"),))
    reported = encode(Planned(done, usage=Usage(10, 5)), Planned)
    assert reported["usage"] == {"input_tokens": 10, "output_tokens": 5}
    unreported = encode(Planned(done, usage=Usage(10, 5, unreported=1)), Planned)
    assert unreported["usage"] == {"input_tokens": 10, "output_tokens": 5, "unreported": 1}
    assert "usage" not in encode(Planned(done), Planned)
    assert encode(RunPolicy(model_timeout=2.5), RunPolicy)["model_timeout"] == 2.5
    assert "model_timeout" not in encode(RunPolicy(max_tool_calls=3), RunPolicy)
    result = RunResult[Any]("r", "a", (done,), "done", usage=Usage(unreported=1))
    assert encode(result, RunResult)["usage"] == {
        "input_tokens": 0,
        "output_tokens": 0,
        "unreported": 1,
    }
    planned = Planned[Any](done, usage=Usage(3, 4, unreported=2))
    assert decode(encode(planned, Planned), Planned) == planned
    assert decode(encode(result, RunResult), RunResult).usage == Usage(unreported=1)


#: The fields every payload of each type writes: those of the release before. A field added
#: since is marked ``metadata=ADDED`` (``agentgen.runtime.wire_fields``), or its workers refuse
#: every payload of the type.
ALWAYS_WRITTEN = {
    "Admission": "ref result",
    "AwaitTask": "task ref",
    "CallRef": "tool_use_id registration_token execution_deadline_ms result_expires_at_ms",
    "CallTask": "run accepted confirmable",
    "ChildOutcome": "run_id final_text final_value",
    "ConfirmationDecision": "approved error",
    "ConfirmationRequest": "run_id agent_id tool_id tool_call_id title prompt arguments",
    "Decide": "tool_call_id approved error",
    "Decision": "call accepted refused",
    "DenyTask": "task arguments",
    "Limits": "max_tool_calls max_consecutive_failed_tool_calls",
    "PlanTask": "run policy messages start finalize tool_results calls_made activity",
    "Planned": "message final_value decisions limits",
    "Prepared": "result route arguments confirmation child",
    "ResultTask": "task child",
    "RunContext": "run_id agent_id labels parent_run_id result_schema_json",
    "RunInput": "request state settings confirmable",
    "RunPolicy": "max_tool_calls max_consecutive_failed_tool_calls tag_clauses restrict_to_tool",
    "RunRequest": (
        "agent_id messages labels policy run_id parent_run_id parent_tool_call_id "
        "result_schema_json"
    ),
    "RunResult": (
        "run_id agent_id transcript final_text final_value tool_calls child_runs "
        "parent_run_id accepted"
    ),
    "RunState": (
        "run policy transcript started finalize tool_results calls consecutive_failures "
        "limits call_ids accepted accepted_ids children activities"
    ),
    "RunStatus": "pending children",
    "TagClause": "allowed_any denied_any",
    "TemporalSettings": (
        "planning_timeout tool_timeout step_timeout heartbeat_timeout retry_initial_interval "
        "retry_backoff retry_maximum_interval retry_maximum_attempts "
        "continue_as_new_after_events max_payload_bytes"
    ),
    "TextPart": "text kind",
    "ToolCallPart": "call_id tool_id arguments kind",
    "ToolResultPart": "call_id tool_id content is_error kind",
    "Usage": "input_tokens output_tokens",
}


def _wire_dataclasses() -> dict[str, type]:
    """Every dataclass the converter writes field by field (a message writes its own JSON)."""
    found: dict[str, type] = {}
    stack: list[Any] = list(TYPES.values())
    while stack:
        hint = stack.pop()
        stack.extend(typing.get_args(hint))
        origin = typing.get_origin(hint)
        cls: Any = origin if dataclasses.is_dataclass(origin) else hint
        written = isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls is not Message
        if written and cls.__name__ not in found:
            found[cls.__name__] = cls
            stack.extend(typing.get_type_hints(cls).values())
    return found


def test_every_field_added_since_the_release_before_is_left_out_at_its_default() -> None:
    wire = _wire_dataclasses()
    assert set(wire) == set(ALWAYS_WRITTEN)
    for name, cls in wire.items():
        always = tuple(f.name for f in dataclasses.fields(cls) if not is_added(f))
        assert always == tuple(ALWAYS_WRITTEN[name].split()), (
            f"{name}: a field added to a wire value needs metadata=ADDED "
            "(agentgen.runtime.wire_fields), so that older workers read payloads that do not "
            "use it"
        )


def test_a_text_phase_crosses_and_text_without_one_is_written_as_before() -> None:
    labelled = Message("assistant", (TextPart("Looking.", phase="commentary"), TextPart("Done.")))
    written = encode(labelled, Message)
    assert written["parts"] == [
        {"text": "Looking.", "kind": "text", "phase": "commentary"},
        {"text": "Done.", "kind": "text"},
    ]
    assert decode(written, Message) == labelled
