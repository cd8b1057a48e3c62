"""What telemetry says about an exception without ``capture_payloads``: its type, its code,
and the frames of its traceback, never its words (nor its causes', its context's, its notes'
or an exception group's members')."""

from __future__ import annotations

import asyncio
import re
import traceback

import pytest
from opentelemetry.trace import StatusCode

from agentgen.runtime.engines.temporal import RunCancelledError
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.telemetry import Telemetry, activated
from agentgen.runtime.telemetry.exceptions import (
    cancelled,
    described,
    error_type,
    exception_event,
    explaining_cancellations,
    stacktrace_without_messages,
    summary,
)
from agentgen.runtime.telemetry.spans import Confirmation
from tests.otel import recorder

SECRET = "ssn-078-05-1120"


def lookup(value: str) -> None:
    raise KeyError(f"no record for {value}")


def failing_tool() -> None:
    try:
        lookup(SECRET)
    except KeyError as exc:
        error = RuntimeError(f"the tool failed on {SECRET}")
        error.add_note(f"argument was {SECRET}")
        raise error from exc


def caught() -> BaseException:
    try:
        failing_tool()
    except RuntimeError as exc:
        return exc
    raise AssertionError("raises")


class Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError(SECRET)


def test_a_stacktrace_keeps_every_frame_and_no_words() -> None:
    text = stacktrace_without_messages(caught())
    assert SECRET not in text
    assert "in lookup" in text and "in failing_tool" in text and "in caught" in text
    # The cause first, as Python prints it; each exception's line is its type alone.
    assert text.index("\nKeyError\n") < text.index("direct cause")
    assert text.endswith("\nRuntimeError\n")
    assert "The above exception was the direct cause of the following exception" in text


def test_a_context_and_a_groups_members_lose_their_words_too() -> None:
    try:
        try:
            lookup(SECRET)
        except KeyError:
            raise ExceptionGroup(f"two failed: {SECRET}", [ValueError(SECRET), caught()])  # noqa: B904 (the context is the point)
    except ExceptionGroup as group:
        text = stacktrace_without_messages(group)
    assert SECRET not in text
    assert "During handling of the above exception" in text
    assert "| builtins.ValueError" not in text  # builtins are bare, as Python prints them
    assert "| ValueError" in text and "| RuntimeError" in text and "ExceptionGroup\n" in text


def test_the_exception_event_has_words_only_when_captured() -> None:
    exc = caught()
    private = exception_event(exc, capture=False)
    assert set(private) == {"exception.type", "exception.stacktrace"}
    assert private["exception.type"] == "RuntimeError"
    assert SECRET not in str(private)
    captured = exception_event(exc, capture=True)
    assert captured["exception.message"] == f"the tool failed on {SECRET}"
    assert SECRET in str(captured["exception.stacktrace"])


def test_an_unprintable_exception_is_recorded_by_its_type() -> None:
    captured = exception_event(Unprintable(), capture=True)
    assert captured["exception.message"] == "<exception str() failed>"
    assert described(Unprintable(), capture=False) == "Unprintable"


def test_a_summary_is_the_type_and_the_code() -> None:
    refused = RegistryError("invalid_payload", f"amount {SECRET!r} is not a number")
    assert summary(refused) == "RegistryError (invalid_payload)"
    assert described(refused, capture=False) == "RegistryError (invalid_payload)"
    assert SECRET in described(refused, capture=True)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (asyncio.CancelledError(), True),
        (RunCancelledError("run 'r' was cancelled"), True),
        (RuntimeError("boom"), False),
        (TimeoutError(), False),
    ],
)
def test_what_counts_as_a_cancellation(exc: BaseException, expected: bool) -> None:
    assert cancelled(exc) is expected


@pytest.mark.parametrize(
    "exc",
    [
        SystemExit(f"card {SECRET} declined"),  # SystemExit's code is its argument
        type("Coded", (Exception,), {"code": f"refused {SECRET}"})(),
        RegistryError(f"refused {SECRET}", "a registry answering with a message as its code"),
        RegistryError("Not_Found", "not an identifier: upper case"),
        RegistryError("x" * 65, "not an identifier: too long"),
    ],
)
def test_only_an_agentgen_error_code_shaped_as_an_identifier_is_its_type(
    exc: BaseException,
) -> None:
    kind = type(exc).__name__
    assert error_type(exc) == kind
    assert summary(exc) == kind
    assert described(exc, capture=False) == kind


def test_a_registry_code_is_the_error_type() -> None:
    assert error_type(RegistryError("provider_lease_lost", "lost")) == "provider_lease_lost"


def test_a_cancellation_is_what_the_code_that_cancelled_it_says() -> None:
    causes: dict[str, str | None] = {"why": "activity_timeout"}
    with explaining_cancellations(lambda: causes["why"]):
        assert not cancelled(asyncio.CancelledError())
        assert error_type(asyncio.CancelledError()) == "activity_timeout"
        assert summary(asyncio.CancelledError()) == "CancelledError (activity_timeout)"
        assert error_type(RuntimeError("boom")) == "RuntimeError"  # only cancellations
        assert cancelled(RunCancelledError("run 'r' was cancelled"))
        causes["why"] = None  # a withdrawal
        assert cancelled(asyncio.CancelledError())
        assert error_type(asyncio.CancelledError()) == "CancelledError"
    causes["why"] = "activity_timeout"
    assert cancelled(asyncio.CancelledError())  # outside the block nobody explains


async def test_an_explained_cancellation_ends_its_span_in_error() -> None:
    otel = recorder()
    otel.exporter.clear()

    async def confirm() -> None:
        with Confirmation("records.analyze", "c1", agent_id="a", run_id="r"):
            await asyncio.Event().wait()

    with activated(Telemetry()), explaining_cancellations(lambda: "activity_timeout"):
        task = asyncio.create_task(confirm())  # the task inherits the explanation
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    (span,) = otel.agentgen_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "CancelledError (activity_timeout)"
    assert (span.attributes or {})["error.type"] == "activity_timeout"
    assert "agentgen.outcome" not in (span.attributes or {})


@pytest.mark.parametrize("capture", [False, True])
def test_a_failed_confirmation_says_why_only_when_captured(capture: bool) -> None:
    otel = recorder()
    otel.exporter.clear()
    with activated(Telemetry(capture_payloads=capture)):
        with Confirmation("records.analyze", "c1", agent_id="a", run_id="r") as span:
            span.decided("failed", error=f"ConnectionError: the approver {SECRET} is away")
    (confirmation,) = otel.agentgen_spans()
    assert confirmation.status.status_code is StatusCode.ERROR
    assert (confirmation.attributes or {})["error.type"] == "confirmation_failed"
    if capture:
        assert SECRET in (confirmation.status.description or "")
    else:
        assert confirmation.status.description == "confirmation_failed"


def recurse(depth: int) -> None:
    if depth == 0:
        raise ValueError(SECRET)
    recurse(depth - 1)


@pytest.mark.parametrize("depth", [0, 2, 3, 50])
def test_the_stacktrace_is_pythons_without_carets_and_words(depth: int) -> None:
    try:
        try:
            recurse(depth)
        except ValueError as exc:
            raise LookupError(SECRET) from exc
    except LookupError as exc:
        ours = stacktrace_without_messages(exc).splitlines()
        pythons = "".join(traceback.format_exception(exc)).splitlines()
    carets = re.compile(r"^\s*[~^]+\s*$")
    words = re.compile(r"^(ValueError|LookupError): .*$")
    assert ours == [words.sub(r"\1", line) for line in pythons if not carets.match(line)]
