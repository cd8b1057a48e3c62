"""Public constructors refuse a wrong type with TypeError and a wrong value with ValueError.

Python's own convention, which ``LocalRegistry`` (a store of the wrong type: TypeError; an
unknown store description: ValueError) and ``Message`` followed while others did not:
``RetryPolicy`` raised ValueError for ``max_retries="3"``, ``RunPolicy`` TypeError for
``max_tool_calls=-1``, ``InMemoryEngine``, ``TemporalSettings`` and ``Search`` ValueError for a
string where a number goes, ``Call("")`` TypeError for an empty tool ID. One constructor each
way per row: the survey of what ``agentgen.runtime`` and ``agentgen.runtime.testing`` export.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentgen.runtime import (
    HttpRegistryClient,
    InMemoryEngine,
    Message,
    ModelPlanner,
    RunPolicy,
    TagClause,
    Telemetry,
    TemporalEngine,
    TemporalSettings,
)
from agentgen.runtime.registry import RetryPolicy
from agentgen.runtime.testing import Call, LocalRegistry, Search

URL = "http://127.0.0.1:1"

# (what, wrong type, wrong value): building each must raise TypeError, then ValueError.
CASES: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
    ("RetryPolicy max_retries", lambda: RetryPolicy(max_retries="3"), lambda: RetryPolicy(-1)),  # type: ignore[arg-type]
    (
        "RetryPolicy backoff_max",
        lambda: RetryPolicy(backoff_max="5s"),  # type: ignore[arg-type]
        lambda: RetryPolicy(backoff_max=86_400.0),
    ),
    (
        "HttpRegistryClient url",
        lambda: HttpRegistryClient(5),  # type: ignore[arg-type]
        lambda: HttpRegistryClient("ftp://registry"),
    ),
    (
        "HttpRegistryClient call_wait_ms",
        lambda: HttpRegistryClient(URL, call_wait_ms="500"),  # type: ignore[arg-type]
        lambda: HttpRegistryClient(URL, call_wait_ms=-5),
    ),
    (
        "HttpRegistryClient token",
        lambda: HttpRegistryClient(URL, token=12345),  # type: ignore[arg-type]
        lambda: HttpRegistryClient(URL, token="secret\n"),
    ),
    (
        "HttpRegistryClient retry",
        lambda: HttpRegistryClient(URL, retry={"max_retries": 1}),  # type: ignore[arg-type]
        lambda: HttpRegistryClient(URL, retry=RetryPolicy(max_retries=101)),
    ),
    (
        "InMemoryEngine tool_timeout",
        lambda: InMemoryEngine(tool_timeout="5"),  # type: ignore[arg-type]
        lambda: InMemoryEngine(tool_timeout=-5),
    ),
    (
        "TemporalEngine poll_interval",
        lambda: TemporalEngine(task_queue="q", poll_interval="1"),  # type: ignore[arg-type]
        lambda: TemporalEngine(task_queue="q", poll_interval=-1),
    ),
    (
        "TemporalEngine task_queue",
        lambda: TemporalEngine(task_queue=5),  # type: ignore[arg-type]
        lambda: TemporalEngine(task_queue=""),
    ),
    (
        "TemporalSettings max_payload_bytes",
        lambda: TemporalSettings(max_payload_bytes="5"),  # type: ignore[arg-type]
        lambda: TemporalSettings(max_payload_bytes=0),
    ),
    (
        "TemporalSettings tool_timeout",
        lambda: TemporalSettings(tool_timeout="30"),  # type: ignore[arg-type]
        lambda: TemporalSettings(tool_timeout=-30),
    ),
    (
        "RunPolicy max_tool_calls",
        lambda: RunPolicy(max_tool_calls="3"),  # type: ignore[arg-type]
        lambda: RunPolicy(max_tool_calls=-1),
    ),
    (
        "RunPolicy model_timeout",
        lambda: RunPolicy(model_timeout="5"),  # type: ignore[arg-type]
        lambda: RunPolicy(model_timeout=0),
    ),
    (
        "RunPolicy restrict_to_tool",
        lambda: RunPolicy(restrict_to_tool=5),  # type: ignore[arg-type]
        lambda: RunPolicy(restrict_to_tool=""),
    ),
    ("TagClause", lambda: TagClause(allowed_any="admin"), lambda: TagClause(allowed_any=[""])),  # type: ignore[arg-type]
    ("ModelPlanner model_id", lambda: ModelPlanner(3), lambda: ModelPlanner("")),  # type: ignore[arg-type]
    (
        "ModelPlanner max_tokens",
        lambda: ModelPlanner("m", max_tokens="4096"),  # type: ignore[arg-type]
        lambda: ModelPlanner("m", max_tokens=0),
    ),
    ("Message", lambda: Message("user", "hi"), lambda: Message("boss", ())),  # type: ignore[arg-type]
    ("Search query", lambda: Search(5), lambda: Search("x", limit=0)),  # type: ignore[arg-type]
    ("Search limit", lambda: Search("x", limit="5"), lambda: Search("x", limit=-1)),  # type: ignore[arg-type]
    ("Call tool_id", lambda: Call(5), lambda: Call("")),  # type: ignore[arg-type]
    (
        "LocalRegistry store",
        lambda: LocalRegistry(store=5),  # type: ignore[arg-type]
        lambda: LocalRegistry(store="postgres://db"),
    ),
]


@pytest.mark.parametrize(("what", "wrong_type", "wrong_value"), CASES, ids=[c[0] for c in CASES])
def test_a_wrong_type_is_a_type_error_and_a_wrong_value_a_value_error(
    what: str, wrong_type: Callable[[], object], wrong_value: Callable[[], object]
) -> None:
    with pytest.raises(TypeError) as typed:
        wrong_type()
    assert type(typed.value) is TypeError, typed.value
    with pytest.raises(ValueError) as valued:
        wrong_value()
    assert type(valued.value) is ValueError, valued.value


def test_telemetry_flags_are_refused_by_type() -> None:
    """Its flags take True or False: anything else is of the wrong type."""
    with pytest.raises(TypeError):
        Telemetry(enabled="yes")  # type: ignore[arg-type]


def test_a_wrong_type_and_a_wrong_value_together_are_a_type_error() -> None:
    """Both named in one message; the type is the first thing to fix."""
    with pytest.raises(TypeError) as refused:
        RunPolicy(max_tool_calls=-1, model_timeout="5")  # type: ignore[arg-type]
    assert "max_tool_calls must be" in str(refused.value)
    assert "model_timeout must be" in str(refused.value)
